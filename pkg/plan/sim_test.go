package plan_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// scenarioStart is every test scenario's start: a Monday.
var scenarioStart = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

const scenarioYAML = `apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {name: explain}
spec:
  start: "2026-11-30T00:00:00Z"
  duration: 4h
  seed: 1
  region: us-east-1
  zones: [us-east-1a, us-east-1b]
  faults: {launchLatency: {mean: 30s, stddev: 0s}}
`

// pool is a NodePool of m6i.large/xlarge on-demand nodes; extra is YAML
// added under spec.template.spec, disruption the spec.disruption block.
func pool(name, weight, extra, disruption, limits string) string {
	if disruption == "" {
		disruption = "consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 1m"
	}
	s := `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ` + name + `}
spec:
  weight: ` + weight + `
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large, m6i.xlarge]}
` + extra + `
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  disruption:
    ` + disruption + "\n"
	if limits != "" {
		s += "  limits: {" + limits + "}\n"
	}
	return s
}

// pod is a bare pod of the default namespace requesting cpu, with extra
// YAML under spec.
func pod(name, cpu, labels, annotations, extra string) string {
	return `---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, labels: {` + labels + `}, annotations: {` + annotations + `}}
spec:
  containers: [{name: c, image: c, resources: {requests: {cpu: "` + cpu + `", memory: 1Gi}}}]
` + extra + "\n"
}

// simulated runs the scenario of the documents to at and returns the
// cluster then.
func simulated(t *testing.T, at time.Duration, docs ...string) *sim.Moment {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(scenarioYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(strings.Join(docs, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := scenario.Load(os.DirFS(dir), ".", "explain")
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.RunUntil(context.Background(), in, os.DirFS(dir), ".", scenarioStart.Add(at), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExplainPodInSimulation: a pod left pending in a simulated cluster,
// explained from the cluster at that moment of the run — each NodePool's
// first blocking reason, with its evidence, exactly.
func TestExplainPodInSimulation(t *testing.T) {
	tainted := "      taints: [{key: dedicated, value: infra, effect: NoSchedule}]"
	zoneA := "        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}"
	zoneAB := "        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b]}"
	const pending = "stays pending: no NodePool can run it"
	for _, tc := range []struct {
		name string
		docs []string
		pod  string
		at   time.Duration // 30 min when 0
		// result is what provisioning does with the pod; pools each pool's
		// verdict in weight order ("yes …" or the reason).
		result string
		pools  []string
	}{
		{
			name: "untolerated taint, and a pool that can",
			docs: []string{pool("infra", "10", tainted, "", ""), pool("general", "1", "", "", ""), pod("web", "500m", "", "", "")},
			pod:  "web", at: 10 * time.Second, result: "fits node general-00001, which is there or on its way: no new node",
			pools: []string{"infra: does not tolerate taint dedicated=infra:NoSchedule", "general: yes m6i.large,m6i.xlarge"},
		},
		{
			name: "bound",
			docs: []string{pool("general", "1", "", "", ""), pod("web", "500m", "", "", "")},
			pod:  "web", result: "bound to node general-00001: nothing to provision",
		},
		{
			name: "untolerated taint",
			docs: []string{pool("infra", "10", tainted, "", ""), pod("web", "500m", "", "", "")},
			pod:  "web", result: pending,
			pools: []string{"infra: does not tolerate taint dedicated=infra:NoSchedule"},
		},
		{
			name: "conflicting requirement",
			docs: []string{pool("general", "1", zoneA, "", ""),
				pod("web", "500m", "", "", "  nodeSelector: {topology.kubernetes.io/zone: us-east-1b}")},
			pod: "web", result: pending,
			pools: []string{"general: requires topology.kubernetes.io/zone In [us-east-1b], but only topology.kubernetes.io/zone In [us-east-1a] is allowed"},
		},
		{
			name: "exhausted limit",
			docs: []string{pool("general", "1", "", "", `cpu: "4"`), pod("big", "3", "", "", ""),
				pod("late", "2", "", "", "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: big}}}]}}")},
			pod: "late", result: pending,
			pools: []string{"general: would exceed the NodePool's limits (cpu 4 of 4 used)"},
		},
		{
			name: "largest instance type",
			docs: []string{pool("general", "1", "", "", ""), pod("huge", "6", "", "", "")},
			pod:  "huge", result: pending,
			pools: []string{"general: no instance type is large enough: the pod needs 6 cpu, the largest compatible type, m6i.xlarge, has 3920m allocatable"},
		},
		{
			name: "pod anti-affinity that cannot be met",
			docs: []string{pool("general", "1", zoneA, "", ""), pod("db-0", "500m", "app: db", "", ""),
				pod("db-1", "500m", "app: db", "", "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: db}}}]}}")},
			pod: "db-1", result: pending,
			pools: []string{"general: cannot satisfy pod anti-affinity on topology.kubernetes.io/zone (app=db); pods matching app=db by topology.kubernetes.io/zone: us-east-1a 1 (default/db-0); NodePool general allows topology.kubernetes.io/zone In [us-east-1a]"},
		},
		{
			name: "topology spread that cannot be met",
			// The pool allows us-east-1b too, which web-1 counts (nodeAffinityPolicy
			// Ignore) and cannot go to: a second pod in us-east-1a is a skew of 2.
			docs: []string{pool("general", "1", zoneAB, "", ""), pod("web-0", "3500m", "app: web", "", "  nodeSelector: {topology.kubernetes.io/zone: us-east-1a}"),
				pod("web-1", "500m", "app: web", "", "  nodeSelector: {topology.kubernetes.io/zone: us-east-1a}\n  topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, nodeAffinityPolicy: Ignore, labelSelector: {matchLabels: {app: web}}}]")},
			pod: "web-1", result: pending,
			pools: []string{"general: cannot satisfy topology spread on topology.kubernetes.io/zone, maxSkew 1 (app=web); " +
				"pods matching app=web by topology.kubernetes.io/zone: us-east-1a 1 (default/web-0); NodePool general allows topology.kubernetes.io/zone In [us-east-1a us-east-1b]"},
		},
		{
			name: "pod affinity to pods that run nowhere",
			docs: []string{pool("general", "1", "", "", ""),
				pod("web", "500m", "", "", "  affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: cache}}}]}}")},
			pod: "web", result: pending,
			pools: []string{"general: cannot satisfy pod affinity on kubernetes.io/hostname (app=cache); no running pod matches app=cache"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.at == 0 {
				tc.at = 30 * time.Minute
			}
			m := simulated(t, tc.at, tc.docs...)
			ex, err := plan.ExplainPod(context.Background(), m.Cluster, "default", tc.pod, provisioning.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if ex.Result != tc.result {
				t.Errorf("result %q, want %q", ex.Result, tc.result)
			}
			var got []string
			for _, v := range ex.Pools {
				if v.CanRun {
					got = append(got, v.NodePool+": yes "+strings.Join(v.NodeClaim.InstanceTypes, ","))
				} else {
					got = append(got, v.NodePool+": "+v.Why)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.pools, "\n") {
				t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.pools, "\n"))
			}
		})
	}
}

// nodeOf is the node the pod runs on in the cluster.
func nodeOf(t *testing.T, c *state.Objects, pod string) string {
	t.Helper()
	for _, p := range c.Pods {
		if p.Name == pod && p.Spec.NodeName != "" {
			return p.Spec.NodeName
		}
	}
	t.Fatalf("pod %s runs nowhere", pod)
	return ""
}

// TestExplainNodeInSimulation: a node of a simulated cluster that
// disruption leaves alone, explained method by method from the cluster at
// that moment: what holds it, exactly.
func TestExplainNodeInSimulation(t *testing.T) {
	const dnd = `karpenter.sh/do-not-disrupt: "true"`
	pdb := `---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
`
	nightly := "consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 1m\n    budgets: [{nodes: \"0\", schedule: \"0 0 * * *\", duration: 12h}]"
	slow := "consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 2h"
	held := func(why string) []string {
		return []string{"expiration: no: it expires at 2026-12-30T00:00:01Z (expireAfter 720h0m0s)", "empty: no: it runs 1 pod(s) that would have to move",
			"drift: no: it has not drifted", "single-node consolidation: no: " + why}
	}
	for _, tc := range []struct {
		name string
		docs []string
		// methods are each method's answer, "method: no|ACTS: why".
		methods []string
	}{
		{"do-not-disrupt pod", []string{pool("general", "1", "", "", ""), pod("web", "500m", "app: web", dnd, "")}, held("pod default/web is annotated karpenter.sh/do-not-disrupt")},
		{"PDB allows 0", []string{pool("general", "1", "", "", ""), pod("web", "500m", "app: web", "", ""), pdb}, held("PodDisruptionBudget default/web allows no eviction of pod web")},
		{"budget allows 0 until a time", []string{pool("general", "1", "", nightly, ""), pod("web", "500m", "app: web", "", "")},
			held(`NodePool general's budget allows no Underutilized disruption now: budgets[0] (nodes 0, from "0 0 * * *" for 12h0m0s), until Mon 12:00 UTC`)},
		{"consolidateAfter not yet elapsed", []string{pool("general", "1", "", slow, ""), pod("web", "500m", "app: web", "", "")},
			held("consolidateAfter 2h0m0s has not passed since its last pod change at 2026-11-30T00:01:11Z (until 2026-11-30T02:01:11Z)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := simulated(t, 30*time.Minute, tc.docs...)
			ex, err := plan.ExplainNode(context.Background(), m.Cluster, nodeOf(t, m.Cluster, "web"), m.At, provisioning.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range ex.Methods {
				verdict := "no"
				if a.Acts {
					verdict = "ACTS"
				}
				got = append(got, a.Method+": "+verdict+": "+a.Why)
			}
			if strings.Join(got, "\n") != strings.Join(tc.methods, "\n") {
				t.Errorf("methods:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.methods, "\n"))
			}
		})
	}
}
