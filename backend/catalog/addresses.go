package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"

	"freelane/backend/atomicfile"
)

// Address is where a provider's requests go and which key they carry:
// its base URL, placeholders unexpanded, the placeholders it uses and the
// variables its key is read from. A catalog that has a provider read
// another variable moves a key as surely as one that moves the provider.
type Address struct {
	BaseURL      string   `json:"base_url"`
	Placeholders []string `json:"placeholders,omitempty"`
	KeyEnv       []string `json:"key_env,omitempty"`
}

func addressOf(p *Provider) Address {
	return Address{BaseURL: p.BaseURL, Placeholders: slices.Clone(p.Placeholders), KeyEnv: slices.Clone(p.KeyEnv)}
}

func (a Address) same(b Address) bool {
	return a.BaseURL == b.BaseURL && slices.Equal(a.Placeholders, b.Placeholders) && slices.Equal(a.KeyEnv, b.KeyEnv)
}

// Decisions are the user's answers to the addresses a newer catalog gives.
// A newer catalog comes from a URL or a file, either of which someone
// else may have written; the address a provider's key and prompts go to
// changes only when the user says so.
type Decisions struct {
	// Confirmed is, by provider id, the address the user last confirmed.
	Confirmed map[string]Address `json:"confirmed,omitempty"`
	// Kept is, by provider id, an address of a newer catalog the user
	// turned down, keeping the one in use; it is not asked about again.
	Kept map[string]Address `json:"kept,omitempty"`
}

// Clone returns a deep copy.
func (d Decisions) Clone() Decisions {
	return Decisions{Confirmed: maps.Clone(d.Confirmed), Kept: maps.Clone(d.Kept)}
}

// Confirm records that the user confirmed the address to for id.
func (d *Decisions) Confirm(id string, to Address) {
	if d.Confirmed == nil {
		d.Confirmed = map[string]Address{}
	}
	d.Confirmed[id] = to
	delete(d.Kept, id)
}

// Keep records that the user turned down the address to for id.
func (d *Decisions) Keep(id string, to Address) {
	if d.Kept == nil {
		d.Kept = map[string]Address{}
	}
	d.Kept[id] = to
}

// Change is an address of a newer catalog the user has not confirmed.
type Change struct {
	ID   string
	Name string
	// From is the address in use; zero for a provider new in the
	// catalog, which is not used until confirmed.
	From Address
	// To is the address the newer catalog gives.
	To Address
}

// New reports whether the provider is new in the catalog.
func (c Change) New() bool { return c.From.BaseURL == "" }

// Hold returns the catalog to use for newer: each provider at the address
// (and with the key variables) the built-in catalog gives it or the user
// confirmed, providers new in
// newer left out until confirmed, and the changes so held (those the user
// turned down aside). builtIn and newer are not changed.
func Hold(newer, builtIn *Catalog, d Decisions) (*Catalog, []Change) {
	out := *newer
	out.Providers = make([]Provider, 0, len(newer.Providers))
	var changes []Change
	for i := range newer.Providers {
		e := newer.Providers[i]
		to := addressOf(&e)
		var from Address
		base, inBuiltIn := builtIn.Provider(e.ID)
		if inBuiltIn {
			from = addressOf(base)
		}
		confirmed, ok := d.Confirmed[e.ID]
		if ok {
			from = confirmed
		}
		trusted := to.same(from) || (inBuiltIn && to.same(addressOf(base)))
		if trusted {
			out.Providers = append(out.Providers, e)
			continue
		}
		if kept, ok := d.Kept[e.ID]; !ok || !kept.same(to) {
			changes = append(changes, Change{ID: e.ID, Name: e.Name, From: from, To: to})
		}
		if from.BaseURL == "" {
			continue
		}
		e.BaseURL, e.Placeholders, e.KeyEnv = from.BaseURL, slices.Clone(from.Placeholders), slices.Clone(from.KeyEnv)
		out.Providers = append(out.Providers, e)
	}
	return &out, changes
}

// DecisionFile keeps Decisions in a file of the data directory.
type DecisionFile struct{ Path string }

// maxDecisionFile bounds the file: a few addresses per provider.
const maxDecisionFile = 1 << 20

// Load reads the decisions; none when the file does not exist.
func (f DecisionFile) Load() (Decisions, error) {
	var d Decisions
	fh, err := os.Open(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("reading the confirmed catalog addresses: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxDecisionFile+1))
	if err != nil {
		return d, fmt.Errorf("reading the confirmed catalog addresses: %w", err)
	}
	if len(b) > maxDecisionFile {
		return d, fmt.Errorf("reading the confirmed catalog addresses: %s is larger than %d bytes", f.Path, maxDecisionFile)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return Decisions{}, fmt.Errorf("reading the confirmed catalog addresses: %s is damaged: %w", f.Path, err)
	}
	return d, nil
}

// Save replaces the file with d.
func (f DecisionFile) Save(d Decisions) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the confirmed catalog addresses: %w", err)
	}
	return atomicfile.Write(f.Path, append(b, '\n'))
}
