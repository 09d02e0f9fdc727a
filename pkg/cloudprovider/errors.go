package cloudprovider

import (
	"errors"
	"fmt"
)

// NodeClaimNotFoundError: the instance behind a NodeClaim does not exist.
type NodeClaimNotFoundError struct{ err error }

// NewNodeClaimNotFoundError wraps err.
func NewNodeClaimNotFoundError(err error) *NodeClaimNotFoundError {
	return &NodeClaimNotFoundError{err: err}
}

func (e *NodeClaimNotFoundError) Error() string { return fmt.Sprintf("nodeclaim not found, %s", e.err) }
func (e *NodeClaimNotFoundError) Unwrap() error { return e.err }

// IsNodeClaimNotFoundError reports whether err is, or wraps, a NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var e *NodeClaimNotFoundError
	return errors.As(err, &e)
}

// IgnoreNodeClaimNotFoundError returns nil for a NodeClaimNotFoundError, err otherwise.
func IgnoreNodeClaimNotFoundError(err error) error {
	if IsNodeClaimNotFoundError(err) {
		return nil
	}
	return err
}

// InsufficientCapacityError: no allowed offering could be launched now.
type InsufficientCapacityError struct{ err error }

// NewInsufficientCapacityError wraps err.
func NewInsufficientCapacityError(err error) *InsufficientCapacityError {
	return &InsufficientCapacityError{err: err}
}

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity, %s", e.err)
}
func (e *InsufficientCapacityError) Unwrap() error { return e.err }

// IsInsufficientCapacityError reports whether err is, or wraps, an InsufficientCapacityError.
func IsInsufficientCapacityError(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// IgnoreInsufficientCapacityError returns nil for an InsufficientCapacityError, err otherwise.
func IgnoreInsufficientCapacityError(err error) error {
	if IsInsufficientCapacityError(err) {
		return nil
	}
	return err
}

// NodeClassNotReadyError: the NodeClass a NodeClaim references cannot be used yet.
type NodeClassNotReadyError struct{ err error }

// NewNodeClassNotReadyError wraps err.
func NewNodeClassNotReadyError(err error) *NodeClassNotReadyError {
	return &NodeClassNotReadyError{err: err}
}

func (e *NodeClassNotReadyError) Error() string { return fmt.Sprintf("nodeclass not ready, %s", e.err) }
func (e *NodeClassNotReadyError) Unwrap() error { return e.err }

// IsNodeClassNotReadyError reports whether err is, or wraps, a NodeClassNotReadyError.
func IsNodeClassNotReadyError(err error) bool {
	var e *NodeClassNotReadyError
	return errors.As(err, &e)
}

// IgnoreNodeClassNotReadyError returns nil for a NodeClassNotReadyError, err otherwise.
func IgnoreNodeClassNotReadyError(err error) error {
	if IsNodeClassNotReadyError(err) {
		return nil
	}
	return err
}

// CapacityReservationsError: a NodeClass's capacity reservations could not
// be resolved (its CapacityReservationsReady condition is False).
type CapacityReservationsError struct{ err error }

// NewCapacityReservationsError wraps err.
func NewCapacityReservationsError(err error) *CapacityReservationsError {
	return &CapacityReservationsError{err: err}
}

func (e *CapacityReservationsError) Error() string { return e.err.Error() }
func (e *CapacityReservationsError) Unwrap() error { return e.err }

// IsCapacityReservationsError reports whether err is, or wraps, a CapacityReservationsError.
func IsCapacityReservationsError(err error) bool {
	var e *CapacityReservationsError
	return errors.As(err, &e)
}
