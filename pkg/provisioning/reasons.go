package provisioning

import "errors"

// ReasonCode says what kind of reason a NodePool gave for not taking a
// pod, so code acts on the kind, not on the words (which say the evidence:
// the limits and their usage, the spread group, …).
type ReasonCode string

const (
	// ReasonOther is every reason without a code of its own yet.
	ReasonOther ReasonCode = ""
	// ReasonLimits: the NodePool's spec.limits leave no room for the pod.
	ReasonLimits ReasonCode = "LimitsExceeded"
	// ReasonTopology: a topology spread constraint, or a pod (anti-)affinity
	// of the pod or of a pod already there, cannot be satisfied.
	ReasonTopology ReasonCode = "Topology"
)

// limitsError is a NodePool's limits leaving no room; its text says the
// usage against each limit.
type limitsError struct{ text string }

func (e *limitsError) Error() string { return e.text }

// CodeOf is the code of a reason newClaim returned.
func CodeOf(err error) ReasonCode {
	var le *limitsError
	var te *topologyError
	switch {
	case err == nil:
		return ReasonOther
	case errors.As(err, &le):
		return ReasonLimits
	case errors.As(err, &te):
		return ReasonTopology
	}
	return ReasonOther
}
