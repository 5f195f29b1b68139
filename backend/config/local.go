package config

import (
	"fmt"
	"regexp"
	"strings"
)

// LocalProvider is what the user decided about one model server that
// discovery finds on this machine: the name its models are served under,
// whether it is kept out of routing, and the limits its models share. It
// is matched to the server found by Kind and Port, so it holds whether or
// not the server answers now: a chain may name the server's models while
// it is stopped.
type LocalProvider struct {
	// Name is the provider name the server's models are served under, as
	// in "ollama/qwen2.5:7b"; the rules of a provider's name apply, and it
	// must differ from every provider's and every other server's name.
	Name string `yaml:"name"`
	// Kind is the kind of server discovery recognised there: ollama,
	// lmstudio, jan, llamacpp, localai, vllm, koboldcpp or openai.
	Kind string `yaml:"kind"`
	// Port is the loopback port it answers on.
	Port int `yaml:"port"`
	// Hidden keeps the server out of routing and out of auto; it is still
	// listed, so it can be shown again.
	Hidden bool `yaml:"hidden,omitempty"`
	// Limits apply to all the server's models together.
	Limits *Limits `yaml:"limits,omitempty"`
}

// MaxLocal bounds the local section: each entry is one server a person
// named, hid or gave limits.
const MaxLocal = 64

// localKind is the characters of a kind of server.
var localKind = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// LocalByName returns the local server recorded under name. The pointer
// refers into c.Local.
func (c *Config) LocalByName(name string) (*LocalProvider, bool) {
	for i := range c.Local {
		if c.Local[i].Name == name {
			return &c.Local[i], true
		}
	}
	return nil, false
}

// LocalAt returns the record of the server of kind found on port.
func (c *Config) LocalAt(kind string, port int) (*LocalProvider, bool) {
	for i := range c.Local {
		if c.Local[i].Kind == kind && c.Local[i].Port == port {
			return &c.Local[i], true
		}
	}
	return nil, false
}

// local checks the records of local servers.
func (v *validator) local(c *Config) {
	if len(c.Local) > MaxLocal {
		v.errorf("local", "has %d entries; at most %d local servers can be recorded", len(c.Local), MaxLocal)
		return
	}
	names := map[string]int{}
	at := map[string]int{}
	for i, l := range c.Local {
		f := fmt.Sprintf("local[%d]", i)
		switch {
		case l.Name == "":
			v.errorf(f+".name", "is required: the provider name the server's models are served under, such as \"ollama\"")
		case !providerName.MatchString(l.Name):
			v.errorf(f+".name", "must be lower-case letters, digits, '_' or '-', starting with a letter or digit, got %q", l.Name)
		case len(l.Name) > 64:
			v.errorf(f+".name", "is %d characters long; at most 64 are allowed", len(l.Name))
		default:
			if first, dup := names[l.Name]; dup {
				v.errorf(f+".name", "local[%d] (line %d) already uses the name %q; give each local server its own name", first, v.line(fmt.Sprintf("local[%d].name", first)), l.Name)
			} else if _, taken := c.Provider(l.Name); taken {
				v.errorf(f+".name", "a provider is already called %q; give the local server another name", l.Name)
			} else {
				names[l.Name] = i
			}
		}
		switch {
		case l.Kind == "":
			v.errorf(f+".kind", "is required: the kind of server found there, such as \"ollama\"")
		case len(l.Kind) > 32 || !localKind.MatchString(l.Kind):
			v.errorf(f+".kind", "must be a kind of local server such as \"ollama\" or \"lmstudio\", got %q", l.Kind)
		}
		if l.Port < 1 || l.Port > 65535 {
			v.errorf(f+".port", "must be a port from 1 to 65535, got %d", l.Port)
		} else if l.Kind != "" {
			key := fmt.Sprintf("%s:%d", l.Kind, l.Port)
			if first, dup := at[key]; dup {
				v.errorf(f+".port", "local[%d] (line %d) already records the %s server on port %d", first, v.line(fmt.Sprintf("local[%d].port", first)), l.Kind, l.Port)
			} else {
				at[key] = i
			}
		}
		v.limits(l.Limits, f+".limits")
	}
}

// localList names the recorded local servers for a message, "" when
// there are none.
func localList(c *Config) string {
	var names []string
	for _, l := range c.Local {
		if l.Name != "" {
			names = append(names, l.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; local servers are: " + strings.Join(names, ", ")
}
