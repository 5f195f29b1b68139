// Package teame2e holds the end-to-end tests of team mode: several
// FreeLane instances, each a whole gateway with its own data directory,
// sharing a real Redis behind a real HAProxy load balancer, with clients
// that only know the balancer's address. It has no code of its own.
package teame2e
