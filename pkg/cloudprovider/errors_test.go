package cloudprovider

import (
	"errors"
	"fmt"
	"testing"
)

func TestTypedErrors(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		name   string
		err    error
		is     func(error) bool
		ignore func(error) error
	}{
		{"not found", NewNodeClaimNotFoundError(base), IsNodeClaimNotFoundError, IgnoreNodeClaimNotFoundError},
		{"insufficient capacity", NewInsufficientCapacityError(base), IsInsufficientCapacityError, IgnoreInsufficientCapacityError},
		{"nodeclass not ready", NewNodeClassNotReadyError(base), IsNodeClassNotReadyError, IgnoreNodeClassNotReadyError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("launching nodeclaim x: %w", tc.err)
			if !tc.is(wrapped) || !errors.Is(wrapped, base) {
				t.Error("a wrapped typed error must still be recognised and unwrap to its cause")
			}
			if tc.ignore(wrapped) != nil {
				t.Error("Ignore must drop its own kind")
			}
			if tc.is(base) || tc.ignore(base) != base {
				t.Error("other errors are neither recognised nor ignored")
			}
		})
	}
}
