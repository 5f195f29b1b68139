package gateway

import (
	"context"
	"errors"
	"os"

	"freelane/backend/vault"
)

// VaultKeyEnv is the environment variable that gives the master key of
// a team's instances.
const VaultKeyEnv = "FREELANE_VAULT_KEY"

// errNoVaultKey and errBadVaultKey refuse a start in team mode without a
// usable shared master key. Neither quotes the variable's value.
var (
	errNoVaultKey = errors.New("store.postgres is set, so every instance must seal and open the shared API keys with the same master key: " +
		"set " + VaultKeyEnv + " to one base64-encoded 32-byte key, the same on every instance (make one with: openssl rand -base64 32)")
	errBadVaultKey = errors.New(VaultKeyEnv + " is not a base64-encoded 32-byte key (make one with: openssl rand -base64 32)")
)

// openVault opens the key vault: on one machine with the master key in
// the keychain or the data directory, and in team mode (shared set) with
// the key every instance is given in FREELANE_VAULT_KEY, since the keys
// sealed in the shared database must open on every instance.
func openVault(ctx context.Context, o Options, shared bool) (*vault.Vault, error) {
	if !shared {
		return vault.Open(ctx, vault.Options{DataDir: o.DataDir, UseKeychain: o.Keychain, Clock: o.Clock})
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	key, ok := lookup(VaultKeyEnv)
	if !ok || key == "" {
		return nil, errNoVaultKey
	}
	v, err := vault.FromKey(key)
	if err != nil {
		return nil, errBadVaultKey
	}
	return v, nil
}
