package provisioning

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// ReasonCode says what kind of reason a NodePool (or a node) gave for not
// taking a pod, so code acts on the kind, never on the words; the evidence
// rides beside it (Reason's fields, a topology error's group).
type ReasonCode string

const (
	// ReasonOther is a reason without a code of its own.
	ReasonOther ReasonCode = ""
	// ReasonStatic: a static NodePool (spec.replicas) launches no node for
	// pending pods. Evidence: Replicas.
	ReasonStatic ReasonCode = "StaticNodePool"
	// ReasonTaint: the pod does not tolerate a taint of the NodePool (or
	// node). Evidence: the scheduling.UntoleratedTaintError.
	ReasonTaint ReasonCode = "Taint"
	// ReasonRequirements: the pod's node requirements and the NodePool's (or
	// claim's) cannot both hold. Evidence: the scheduling.IncompatibleError.
	ReasonRequirements ReasonCode = "Requirements"
	// ReasonNoInstanceType: no instance type satisfies the requirements.
	// Evidence: Requirements, OfNodePool.
	ReasonNoInstanceType ReasonCode = "NoInstanceType"
	// ReasonTooLarge: every instance type that satisfies the requirements is
	// too small. Evidence: Resource, Needed, InstanceType, Allocatable,
	// DaemonSets.
	ReasonTooLarge ReasonCode = "TooLarge"
	// ReasonHostPort: a host port the pod needs is taken — by a DaemonSet on
	// every type that fits (Port, Protocol, ByDaemonSet), or on the node.
	ReasonHostPort ReasonCode = "HostPort"
	// ReasonLimits: the NodePool's spec.limits leave no room for the pod.
	// Evidence: Limits.
	ReasonLimits ReasonCode = "LimitsExceeded"
	// ReasonTopology: a topology spread constraint, or a pod (anti-)affinity
	// of the pod or of a pod already there, cannot be satisfied. Evidence:
	// the constraint (its error's text names it).
	ReasonTopology ReasonCode = "Topology"
	// ReasonMinValues: a minValues requirement cannot be met by the types
	// that fit. Evidence: Key, MinValues, Distinct.
	ReasonMinValues ReasonCode = "MinValues"
	// ReasonNoRoom: no instance type left to a planned claim holds the pod
	// beside the pods it already has.
	ReasonNoRoom ReasonCode = "NoRoom"
	// ReasonNoRemainingType: no instance type left to a planned claim
	// satisfies its requirements with the pod's. Evidence: Requirements.
	ReasonNoRemainingType ReasonCode = "NoRemainingType"
	// ReasonNodeFull: an existing node has no room for the pod.
	ReasonNodeFull ReasonCode = "NodeFull"
	// ReasonNodeDeleting: an existing node is being deleted.
	ReasonNodeDeleting ReasonCode = "NodeDeleting"
	// ReasonNotPlaced: the pod fits a new node of the NodePool, yet the pass
	// placed it nowhere (a claim cap, a batch's order).
	ReasonNotPlaced ReasonCode = "NotPlaced"
	// ReasonReservedCapacity: the pod could launch into a capacity
	// reservation, but the pass has counted every compatible one down to
	// nothing (or, LastReservation, joining a claim would take away the
	// claim's last reservation). Provisioning defers the pod to the next
	// pass, when the cloud says what is left, instead of buying on-demand
	// or spot for it or trying a NodePool of lower weight, as upstream's
	// ReservedOfferingError does.
	ReasonReservedCapacity ReasonCode = "ReservedCapacity"
	// ReasonDRA: the pod asks for devices through Dynamic Resource
	// Allocation, and the Policy does not model DRA (upstream's default,
	// --ignore-dra-requests=true): no NodePool launches for it, nothing
	// places it, and no preference of it is relaxed, as upstream's
	// DRAError.
	ReasonDRA ReasonCode = "DynamicResourceAllocation"
	// ReasonDRAClaim: a device claim of the pod cannot be read or
	// allocated as written: the claim or its template is missing, a
	// DeviceClass it names is missing, a selector does not compile.
	// Evidence: Detail, the allocator's words.
	ReasonDRAClaim ReasonCode = "DeviceClaim"
	// ReasonDRADevices: the node, or every instance type left to the
	// NodeClaim, has not the devices the pod's claims ask for beside what
	// is allocated, or a shared claim went with another pod elsewhere.
	// Evidence: Detail.
	ReasonDRADevices ReasonCode = "Devices"
)

// Reason is one reason of the kinds that carry their evidence as values: a
// code and what shows it. Error renders it; that is the only place its
// words are made.
type Reason struct {
	Code ReasonCode
	// Replicas of a static NodePool.
	Replicas int64
	// Requirements no instance type satisfies; OfNodePool: they are the
	// NodePool's own, before the pod's were added.
	Requirements scheduling.Requirements
	OfNodePool   bool
	// Resource the pod needs more of (Needed) than InstanceType, the
	// compatible type that comes closest, has allocatable (Allocatable, of
	// which DaemonSets take DaemonSets; "" for none).
	Resource                        corev1.ResourceName
	Needed, Allocatable, DaemonSets string
	InstanceType                    string
	Port                            int32
	Protocol                        corev1.Protocol
	ByDaemonSet                     bool
	// Limits are the NodePool's limits and their usage, in the order of
	// the resources.
	Limits []LimitUse
	// Key of a minValues requirement, its MinValues and the Distinct
	// values left.
	Key                 string
	MinValues, Distinct int
	// Truncated: the values left are those of the cheapest that many
	// types, all a NodeClaim may name (MaxInstanceTypes).
	Truncated int
	// LastReservation: the pod would have taken the claim's last
	// capacity reservation away (ReasonReservedCapacity).
	LastReservation bool
	// Detail names the device claim, template or class and what is wrong
	// (ReasonDRAClaim, ReasonDRADevices).
	Detail string
}

// LimitUse is one of a NodePool's limits and how much of it is used.
type LimitUse struct {
	Resource    corev1.ResourceName
	Used, Limit string
}

// Error is the reason in words: the one place a Reason is rendered (its
// complexity is one case a code).
func (r *Reason) Error() string {
	switch r.Code {
	case ReasonStatic:
		return fmt.Sprintf("a static NodePool (replicas %d): it keeps its own nodes and launches none for pending pods", r.Replicas)
	case ReasonNoInstanceType:
		if r.OfNodePool {
			return fmt.Sprintf("no instance type satisfies the NodePool's requirements (%s)", r.Requirements)
		}
		return fmt.Sprintf("no instance type satisfies %s", r.Requirements)
	case ReasonTooLarge:
		overhead := ""
		if r.DaemonSets != "" {
			overhead = ", of which DaemonSets take " + r.DaemonSets
		}
		return fmt.Sprintf("no instance type is large enough: the pod needs %s %s, the largest compatible type, %s, has %s allocatable%s",
			r.Needed, r.Resource, r.InstanceType, r.Allocatable, overhead)
	case ReasonHostPort:
		if r.ByDaemonSet {
			return fmt.Sprintf("host port %d/%s, which it needs, is taken by a DaemonSet on every instance type that fits", r.Port, r.Protocol)
		}
		return "a host port it needs is taken"
	case ReasonLimits:
		parts := make([]string, len(r.Limits))
		for i, l := range r.Limits {
			parts[i] = fmt.Sprintf("%s %s of %s used", l.Resource, l.Used, l.Limit)
		}
		return "would exceed the NodePool's limits (" + strings.Join(parts, ", ") + ")"
	case ReasonMinValues:
		if r.Truncated > 0 {
			return fmt.Sprintf("minValues: %s needs %d distinct values, only %d remain among the cheapest %d instance types that fit (a NodeClaim names at most %d)",
				r.Key, r.MinValues, r.Distinct, r.Truncated, r.Truncated)
		}
		return fmt.Sprintf("minValues: %s needs %d distinct values, only %d remain among the instance types that fit", r.Key, r.MinValues, r.Distinct)
	case ReasonNoRoom:
		return "not enough room on any remaining instance type"
	case ReasonNoRemainingType:
		return fmt.Sprintf("no remaining instance type satisfies %s", r.Requirements)
	case ReasonNodeFull:
		return "not enough room"
	case ReasonNodeDeleting:
		return "the node is being deleted"
	case ReasonNotPlaced:
		return "it fits a new node but was not placed"
	case ReasonDRA:
		return "pod has Dynamic Resource Allocation requirements, which are not modelled under --ignore-dra-requests=true (upstream's default): no node is launched for it"
	case ReasonDRAClaim:
		return "its device claims cannot be allocated as written: " + r.Detail
	case ReasonDRADevices:
		return "not the devices its claims ask for: " + r.Detail
	case ReasonReservedCapacity:
		if r.LastReservation {
			return "joining the claim would leave it no capacity reservation to launch into"
		}
		return "compatible capacity reservations are available, but this pass has reserved all of them: deferred to the next pass"
	}
	return string(r.Code)
}

// CodeOf is the code of a reason the engine gave (ReasonOther for an error
// of no known kind).
func CodeOf(err error) ReasonCode {
	var (
		r     *Reason
		te    *topologyError
		taint *scheduling.UntoleratedTaintError
		inc   *scheduling.IncompatibleError
	)
	switch {
	case err == nil:
		return ReasonOther
	case errors.As(err, &r):
		return r.Code
	case errors.As(err, &te):
		return ReasonTopology
	case errors.As(err, &taint):
		return ReasonTaint
	case errors.As(err, &inc):
		return ReasonRequirements
	}
	return ReasonOther
}
