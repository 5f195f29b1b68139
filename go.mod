module freelane

go 1.26.8

require (
	github.com/mattn/go-sqlite3 v1.14.53
	go.yaml.in/yaml/v3 v3.0.6
)
