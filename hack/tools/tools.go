//go:build tools

// Package tools pins the code generator and linter versions this repository
// runs. It is its own module so their dependencies never leak into Joiner's.
package tools

import (
	_ "honnef.co/go/tools/cmd/staticcheck"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
