package disruption

import (
	"fmt"
	"strings"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// BlockCode says what keeps a node from a voluntary disruption.
type BlockCode string

const (
	// BlockNodeDoNotDisrupt: the node (or its claim) is annotated
	// karpenter.sh/do-not-disrupt.
	BlockNodeDoNotDisrupt BlockCode = "NodeDoNotDisrupt"
	// BlockPodDoNotDisrupt: a pod of the node is annotated do-not-disrupt
	// (Until set for a duration).
	BlockPodDoNotDisrupt BlockCode = "PodDoNotDisrupt"
	// BlockPDB: a PodDisruptionBudget allows no eviction of a pod of it.
	BlockPDB BlockCode = "PodDisruptionBudget"
	// BlockBudget: the NodePool's disruption budget allows no more
	// disruptions of the reason now.
	BlockBudget BlockCode = "NodePoolBudget"
	// BlockDriftNowhere: drifted, but its pods would have nowhere to go.
	BlockDriftNowhere BlockCode = "DriftedNowhereToGo"
	// BlockStaticNoType: drifted, but its static NodePool can launch no
	// instance type.
	BlockStaticNoType BlockCode = "StaticNoInstanceType"
	// BlockSpotToSpotOff: a spot node is not replaced by a spot node
	// without the SpotToSpotConsolidation feature gate.
	BlockSpotToSpotOff BlockCode = "SpotToSpotOff"
	// BlockSpotToSpotTypes: too few cheaper spot types for spot-to-spot
	// consolidation (Needed, Found).
	BlockSpotToSpotTypes BlockCode = "SpotToSpotTooFewTypes"
)

// BlockReason is why a node is held back: a code and its evidence, put
// into words in one place (String). The zero value is no reason.
type BlockReason struct {
	Code BlockCode
	// Pod ("namespace/name") and PDB ("namespace/name"): the pod that asks
	// not to be disrupted or that a PDB protects.
	Pod, PDB string
	// Value and Until: a pod's do-not-disrupt duration and its end (RFC
	// 3339), for one that is not permanent.
	Value, Until string
	// NodePool and Budget: the NodePool whose budget holds the node, for
	// the reason.
	NodePool string
	Budget   v1.DisruptionReason
	// Needed and Found: spot-to-spot's cheaper spot types.
	Needed, Found int
}

// None reports whether there is no reason.
func (r BlockReason) None() bool { return r.Code == "" }

// String is the reason as plan, explain and the controller's events say it.
func (r BlockReason) String() string {
	switch r.Code {
	case "":
		return ""
	case BlockNodeDoNotDisrupt:
		return "node is annotated " + v1.AnnotationDoNotDisrupt
	case BlockPodDoNotDisrupt:
		s := fmt.Sprintf("pod %s is annotated %s", r.Pod, v1.AnnotationDoNotDisrupt)
		if r.Until != "" {
			s += fmt.Sprintf(" (%s: until %s)", r.Value, r.Until)
		}
		return s
	case BlockPDB: // the pod is in the PDB's namespace
		_, pod, _ := strings.Cut(r.Pod, "/")
		return fmt.Sprintf("PodDisruptionBudget %s allows no eviction of pod %s", r.PDB, pod)
	case BlockBudget:
		return fmt.Sprintf("NodePool %s's budget allows no more %s disruptions now", r.NodePool, r.Budget)
	case BlockDriftNowhere:
		return "drifted, but its pods would have nowhere to go"
	case BlockStaticNoType:
		return "drifted, but its static NodePool can launch no instance type"
	case BlockSpotToSpotOff:
		return "spot-to-spot consolidation is off (the SpotToSpotConsolidation feature gate): a spot node is not replaced by a spot node"
	case BlockSpotToSpotTypes:
		return fmt.Sprintf("spot-to-spot consolidation needs %d cheaper spot instance types, found %d", r.Needed, r.Found)
	}
	return string(r.Code)
}
