package config

import _ "embed"

// Example is the commented example config, also shipped as
// backend/config/example.yaml. It is valid with no environment variables
// set; only warnings about the missing keys remain, which a test asserts.
//
//go:embed example.yaml
var Example []byte
