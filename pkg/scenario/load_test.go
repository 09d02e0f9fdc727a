package scenario

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadErrors: what a scenario directory gets wrong is answered with
// the file, the line, the field and the fix.
const minimalPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"typo in a Deployment", map[string]string{"pool.yaml": minimalPool, "app.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replcas: 3\n"},
			[]string{"app.yaml", `Deployment "web"`, `unknown field "spec.replcas"`}},
		{"removed API version", map[string]string{"pool.yaml": minimalPool, "app.yaml": "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: web}\n"},
			[]string{"app.yaml:1", "apps/v1beta1 is no longer served", "fix: apiVersion: apps/v1"}},
		{"scenario of an unknown apiVersion", map[string]string{"pool.yaml": minimalPool, "scenario.yaml": "apiVersion: joiner.dev/v1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  duration: 24h\n"},
			[]string{"scenario.yaml:1", "a scenario is apiVersion joiner.dev/v1alpha1, kind Scenario", "fix: apiVersion: joiner.dev/v1alpha1"}},
		{"scenario of an unknown kind", map[string]string{"pool.yaml": minimalPool, "scenario.yaml": "apiVersion: joiner.dev/v1alpha1\nkind: Simulation\nmetadata: {name: x}\n"},
			[]string{"scenario.yaml:2", "kind Scenario"}},
		{"scenario.yaml without apiVersion", map[string]string{"pool.yaml": minimalPool, "scenario.yaml": "spec:\n  duration: 24h\n"},
			[]string{"scenario.yaml", "a scenario is apiVersion joiner.dev/v1alpha1, kind Scenario"}},
		{"two NodePools of one name", map[string]string{"pool.yaml": minimalPool, "more/pool-copy.yaml": "# a copy\n" + minimalPool},
			[]string{"sc/more/pool-copy.yaml:4", `NodePool "general" is defined twice`, "sc/pool.yaml:3"}},
		{"an early Provisioner is answered, not skipped", map[string]string{"pool.yaml": minimalPool,
			"old.yaml": "apiVersion: provisioning.karpenter.sh/v1alpha2\nkind: Provisioner\nmetadata: {name: old}\nspec:\n  instanceTypes: [m5.large]\n"},
			[]string{"old.yaml:2", "Provisioner (provisioning.karpenter.sh/v1alpha2) was replaced by NodePool (karpenter.sh/v1)"}},
		{"a Helm template", map[string]string{"pool.yaml": strings.Replace(minimalPool, "{name: general}", "{name: {{ .Values.name }}}", 1)},
			[]string{"pool.yaml:3", "Helm template", "render it first"}},
		{"bad NodePool", map[string]string{"pool.yaml": strings.Replace(minimalPool, "operator: In", "operator: Within", 1)},
			[]string{"pool.yaml", "spec.template.spec.requirements[0].operator", "Unsupported value"}},
		{"legacy NodePool", map[string]string{"pool.yaml": strings.Replace(minimalPool, "  template:", "  disruption: {consolidationPolicy: WhenUnderutilized, consolidateAfter: 1m}\n  template:", 1)},
			[]string{"consolidationPolicy: WhenEmptyOrUnderutilized"}},
		{"scenario units", map[string]string{"pool.yaml": minimalPool, "scenario.yaml": "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  start: \"2026-11-30T00:00:00Z\"\n  duration: 1 day\n"},
			[]string{"scenario.yaml:6", "spec.duration", "1 day", "fix: write a duration with a unit"}},
		{"wrong unit in a request", map[string]string{"pool.yaml": minimalPool, "app.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n        - name: web\n          image: web\n          resources:\n            requests: {cpu: 500mb}\n"},
			[]string{"app.yaml:13", `Deployment "web"`, "spec.template.spec.containers[0].resources.requests.cpu", "fix: write a Kubernetes quantity"}},
		{"scenario unknown field", map[string]string{"pool.yaml": minimalPool, "scenario.yaml": "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  start: \"2026-11-30T00:00:00Z\"\n  duraton: 24h\n"},
			[]string{"scenario.yaml:6", `unknown field "spec.duraton"`, "fix: the fields of spec: start, duration"}},
		{"scenario bad share", map[string]string{"pool.yaml": minimalPool, "scenario.yaml": "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  start: \"2026-11-30T00:00:00Z\"\n  duration: 24h\n  faults: {apiErrorRate: 5}\n"},
			[]string{"spec.faults.apiErrorRate", "use a number from 0 to 1"}},
		{"scenario default spread with a labelSelector", map[string]string{"pool.yaml": minimalPool, "scenario.yaml": "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  start: \"2026-11-30T00:00:00Z\"\n  duration: 24h\n  schedulerConfig:\n    podTopologySpread:\n      defaultConstraints:\n      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}\n"},
			[]string{"scenario.yaml:7", "spec.schedulerConfig", "defaultConstraints[0].labelSelector: must not be set", "remove it"}},
		{"bad capacity reservations", map[string]string{"pool.yaml": minimalPool, "scenario.yaml": "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  start: \"2026-11-30T00:00:00Z\"\n  duration: 24h\n  capacityReservations:\n  - {id: CR-1, instanceType: m7i.large, zone: us-east-1a, count: 0}\n  - {id: cr-2, instanceType: m7i.large, zone: us-east-1a, count: 1, type: capacity-block}\n  - {id: cr-3, instanceType: m7i.large, zone: us-east-1a, count: 1, type: odcr, ownerID: \"42\"}\n"},
			[]string{"spec.capacityReservations[0].id", "cr- and lower-case letters", "spec.capacityReservations[0].count", "at least 1",
				"spec.capacityReservations[1].end", "a Capacity Block ends", "spec.capacityReservations[2].type", "use default", "spec.capacityReservations[2].ownerID", "12 digits"}},
		{"no NodePool", map[string]string{"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
			[]string{"has no NodePool"}},
		{"NodePool naming a missing EC2NodeClass", map[string]string{"pool.yaml": strings.Replace(minimalPool, "name: default}", "name: defualt}", 1),
			"class.yaml": "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec:\n  role: r\n  amiSelectorTerms: [{alias: al2023@latest}]\n  subnetSelectorTerms: [{tags: {a: b}}]\n  securityGroupSelectorTerms: [{tags: {a: b}}]\n"},
			[]string{"pool.yaml:8", "spec.template.spec.nodeClassRef.name", `EC2NodeClass "defualt" is not in the scenario`, "name one it has: default"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range tc.files {
				fsys["sc/"+name] = &fstest.MapFile{Data: []byte(body)}
			}
			_, err := Load(fsys, "sc", "sc")
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
