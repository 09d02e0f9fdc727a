// Package examples embeds the bundled simulation scenario, so `joiner
// simulate` with no argument runs it from the binary alone.
package examples

import "embed"

// Scenarios holds scenarios/default (and any other bundled scenario).
//
//go:embed scenarios
var Scenarios embed.FS
