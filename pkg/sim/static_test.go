package sim

import "testing"

// staticPools: a static pool of two nodes and a dynamic one.
const staticPools = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: fixed
spec:
  replicas: 2
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["m6i.large"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
---
` + loopPool

const bigApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 3
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: "3", memory: 4Gi}}
`

// TestStaticNodePool: a static pool keeps its two nodes all day, empty or
// not (consolidation leaves them alone), and the pods that do not fit
// them go to the dynamic pool, which the static one never displaces.
func TestStaticNodePool(t *testing.T) {
	rep, _ := runInline(t, inlineScenario(staticPools, bigApp, "  start: \"2026-11-30T08:00:00Z\"\n  duration: 6h\n  seed: 1\n"))
	fixed, general := 0, 0
	for _, n := range rep.ByNode {
		switch n.NodePool {
		case "fixed":
			fixed++
			if n.Deleted != nil {
				t.Errorf("static node %s deleted at %s (%s)", n.Name, n.Deleted, n.DeletedReason)
			}
			if n.InstanceType != "m6i.large" {
				t.Errorf("static node %s is %s", n.Name, n.InstanceType)
			}
		case "general":
			general++
		}
	}
	if fixed != 2 {
		t.Errorf("%d nodes of the static pool launched, want 2", fixed)
	}
	if general == 0 || rep.Pods.Ran != 3 {
		t.Errorf("%d general nodes, %d pods ran; want the 3-core pods on general nodes (m6i.large has 2 cores)", general, rep.Pods.Ran)
	}
}
