package report

import (
	"fmt"
	"io"
	"time"
)

// BufferReport says what the scenario's CapacityBuffers did: each
// buffer's chunks, and — from a second run of the same scenario without
// them — what they cost and what they saved in pod start-up.
type BufferReport struct {
	Buffers []BufferStat `json:"buffers"`
	// CostUSD and WithoutCostUSD: the run's cost, and the same scenario's
	// without its buffers (0, with the startup figures, when the run was
	// asked not to make that second run).
	CostUSD        float64 `json:"costUSD"`
	WithoutCostUSD float64 `json:"withoutCostUSD"`
	// Startup percentiles of the pods that ran, with and without buffers.
	StartupP50        *float64 `json:"startupSecondsP50,omitempty"`
	StartupP99        *float64 `json:"startupSecondsP99,omitempty"`
	WithoutStartupP50 *float64 `json:"withoutStartupSecondsP50,omitempty"`
	WithoutStartupP99 *float64 `json:"withoutStartupSecondsP99,omitempty"`
}

// BufferStat is one CapacityBuffer over the run.
type BufferStat struct {
	Name string `json:"name"` // namespace/name
	// Chunks: at the end, and the most at once.
	Chunks    int32 `json:"chunks"`
	MaxChunks int32 `json:"maxChunks"`
	// Ready is the last ReadyForProvisioning reason (Resolved, or why not).
	Ready        string `json:"ready"`
	ReadyMessage string `json:"readyMessage,omitempty"`
	// Provisioning is the last Provisioning reason, as upstream sets it.
	Provisioning        string `json:"provisioning,omitempty"`
	ProvisioningMessage string `json:"provisioningMessage,omitempty"`
}

// LaunchLoop is one workload's pods that provisioning gave up on.
type LaunchLoop struct {
	Workload string `json:"workload"`
	Reason   string `json:"reason"`
	Pods     int    `json:"pods"`
	// Nodes launched for those pods that they did not bind to.
	Nodes int `json:"nodesLaunched"`
}

// Repairs is node repair's work in a run with node failures.
type Repairs struct {
	// Failed nodes stopped reporting (spec.faults.nodeFailuresPerNodeHour).
	Failed int `json:"failed"`
	// Replaced are the nodes repair deleted once their toleration passed.
	Replaced int `json:"replaced"`
	// Held counts the repair passes × NodePools that more than 20 % of
	// their nodes being unhealthy held back.
	Held int `json:"held"`
}

// ResizeReport is what one in-place resize event did to its workload's
// pods: resized at once (pending, or their node had room), deferred for
// lack of room (and how many of those the kubelet resized later, once room
// appeared), or infeasible (the node could never hold the new requests).
type ResizeReport struct {
	At         time.Time         `json:"at"`
	Workload   string            `json:"workload"`
	Container  string            `json:"container"`
	Requests   map[string]string `json:"requests"`
	Pods       int               `json:"pods"`
	InPlace    int               `json:"inPlace"`
	Deferred   int               `json:"deferred"`
	DoneLater  int               `json:"doneLater"`
	Infeasible int               `json:"infeasible"`
}

// OverlayReport is what one NodeOverlay did in the run.
type OverlayReport struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight"`
	// Applied is false when the overlay was refused: Reason (Conflict,
	// RuntimeValidation) and Message say why, as its ValidationSucceeded
	// condition would in a cluster.
	Applied bool   `json:"applied"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// InstanceTypes counts the (NodePool, instance type) pairs whose price
	// or capacity it set (where a higher weight did not).
	InstanceTypes int `json:"instanceTypes"`
	// NodesLaunched counts the nodes launched on such a pair.
	NodesLaunched int `json:"nodesLaunched"`
}

func writeOverlays(w io.Writer, os []OverlayReport) {
	for i, o := range os {
		label := "               "
		if i == 0 {
			label = "NodeOverlays   "
		}
		if !o.Applied {
			fmt.Fprintf(w, "%s%s (weight %d): refused, %s: %s\n", label, o.Name, o.Weight, o.Reason, o.Message)
			continue
		}
		fmt.Fprintf(w, "%s%s (weight %d): %d instance types, %d nodes launched on them\n", label, o.Name, o.Weight, o.InstanceTypes, o.NodesLaunched)
	}
	if len(os) > 0 {
		fmt.Fprintln(w, "               (prices in this report are as the overlays set them)")
	}
}
