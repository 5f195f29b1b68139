package gateway_test

import "freelane/backend/config"

// allowLoopbackCatalogs lets the tests serve catalogs from httptest
// servers, which listen on loopback over plain http.
func allowLoopbackCatalogs(cfg *config.Config) { cfg.Catalog.AllowHTTPLoopback = true }
