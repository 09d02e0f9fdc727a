package sim

import (
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/report"
)

// sixPods: six 1-vCPU pods with no spread constraints of their own, which
// two m6i.xlarge hold between them.
const sixPods = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: "1", memory: 1Gi}}
`

const xlargePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: ["m6i.xlarge"]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
`

// spec.schedulerConfig's default zone spread (DoNotSchedule, maxSkew 1)
// reaches the pods that declare none: provisioning launches in every zone
// and the kube-scheduler model binds two pods to each, where without it
// the six pods share two nodes.
func TestSchedulerConfigSpreadsByDefault(t *testing.T) {
	spec := `  start: "2026-11-30T08:00:00Z"
  duration: 30m
  seed: 1
  zones: [us-east-1a, us-east-1b, us-east-1c]
`
	zones := func(rep *report.Report) string {
		byZone := map[string]int{}
		for _, n := range rep.ByNode {
			byZone[n.Zone] += n.PodsRan
		}
		var out []string
		for _, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
			out = append(out, strings.Repeat("x", byZone[z]))
		}
		return strings.Join(out, "|")
	}
	plain, _ := runInline(t, inlineScenario(xlargePool, sixPods, spec))
	if plain.Nodes.Launched != 2 {
		t.Errorf("without defaults: %d nodes launched (%s), want the 2 that hold the six pods", plain.Nodes.Launched, zones(plain))
	}
	spread, _ := runInline(t, inlineScenario(xlargePool, sixPods, spec+`  schedulerConfig:
    podTopologySpread:
      defaultConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`))
	if got := zones(spread); got != "xx|xx|xx" || spread.Nodes.Launched != 3 {
		t.Errorf("with the default zone spread: pods by zone %s on %d nodes, want two in each zone on 3", got, spread.Nodes.Launched)
	}
	if spread.Pods.NeverRan != 0 {
		t.Errorf("%d pods never ran", spread.Pods.NeverRan)
	}
}
