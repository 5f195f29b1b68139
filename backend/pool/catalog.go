package pool

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"freelane/backend/atomicfile"
	"freelane/backend/catalog"
	"freelane/backend/tier"
)

// catalogFile is the newer catalog kept in the data directory: dropped
// there by the user or saved by "load from a URL".
const catalogFile = "catalog.yaml"

// catalogBuiltIn is the source of the catalog compiled into the binary.
const catalogBuiltIn = "built in"

// catalogAddressesFile keeps the user's answers to the addresses a newer
// catalog gives, in the data directory.
const catalogAddressesFile = "catalog-addresses.json"

// CatalogAddresses is where the user's answers to the addresses a newer
// catalog gives are kept.
func CatalogAddresses(dataDir string) catalog.DecisionFile {
	return catalog.DecisionFile{Path: filepath.Join(dataDir, catalogAddressesFile)}
}

// HeldCatalog is cat as it will be used, every address the user has not
// confirmed held: what a client is told about before the control plane
// has opened. The control plane logs a damaged answers file.
func HeldCatalog(dataDir string, cat *catalog.Catalog) *catalog.Catalog {
	d, _ := CatalogAddresses(dataDir).Load()
	held, _ := catalog.Hold(cat, catalog.Embedded(), d)
	return held
}

// LoadCatalog returns the catalog to use: the data directory's file when
// it is valid and not older than the built-in one, the built-in one
// otherwise (with the reason logged), and where it came from.
func LoadCatalog(dataDir string, log *slog.Logger) (*catalog.Catalog, string) {
	builtIn := catalog.Embedded()
	path := filepath.Join(dataDir, catalogFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return builtIn, catalogBuiltIn
	}
	if err != nil {
		log.Warn("the catalog file cannot be read; the built-in catalog is used", "file", path, "err", err)
		return builtIn, catalogBuiltIn
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, catalog.MaxFile+1))
	if err != nil {
		log.Warn("the catalog file cannot be read; the built-in catalog is used", "file", path, "err", err)
		return builtIn, catalogBuiltIn
	}
	cat, err := catalog.Parse(path, data)
	if err != nil {
		log.Error("the catalog file is not valid; the built-in catalog is used", "file", path, "problems", err.Error())
		return builtIn, catalogBuiltIn
	}
	if cat.Date < builtIn.Date {
		log.Warn("the catalog file is older than the built-in catalog, which is used instead", "file", path, "date", cat.Date, "built_in", builtIn.Date)
		return builtIn, catalogBuiltIn
	}
	return cat, path
}

// KeepCatalog keeps data, a catalog file now in use, in the data
// directory for the next start; a failure is logged, since the catalog is
// in use all the same.
func (p *Pool) KeepCatalog(data []byte) {
	path := filepath.Join(p.o.DataDir, catalogFile)
	if err := atomicfile.Write(path, data); err != nil {
		p.log.Warn("the new catalog is in use but could not be kept for the next start", "file", path, "err", err)
	}
}

// envNames are the key variables of the catalog's first free tiers.
func envNames(cat *catalog.Catalog) []string {
	var names []string
	for _, e := range cat.Providers {
		if e.Tier == tier.OfferFree && len(e.KeyEnv) > 0 && len(names) < 6 {
			names = append(names, e.KeyEnv[0])
		}
	}
	return names
}
