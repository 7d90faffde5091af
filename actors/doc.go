// Package actors wraps the Proto.Actor runtime for Braid: an actor System
// that logs through the caller's slog.Logger (silent by default) instead of
// stdout, and the helpers Braid's actors share. Cluster support lives here
// too as it is added, so the rest of Braid never touches Proto.Actor's
// cluster API directly.
package actors
