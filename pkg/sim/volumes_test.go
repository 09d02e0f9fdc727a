package sim

import (
	"context"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

const gp3Class = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: gp3
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
`

// Scenario input naming storage the scenario lacks fails the load, naming
// the file, line, field and fix.
func TestVolumeLoadErrors(t *testing.T) {
	podWithClaim := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n  volumes:\n    - name: data\n      persistentVolumeClaim: {claimName: data}\n"
	claim := func(extra string) string {
		return "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n" + extra
	}
	sts := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: c, image: x}]}\n  volumeClaimTemplates:\n    - metadata: {name: data}\n      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"a pod's claim is missing", map[string]string{"app.yaml": podWithClaim},
			[]string{"sc/app.yaml:8", "spec.volumes[0].persistentVolumeClaim.claimName", "PersistentVolumeClaim default/data is not in the scenario", "fix: add a v1 PersistentVolumeClaim data"}},
		{"a claim's class is missing", map[string]string{"app.yaml": podWithClaim, "pvc.yaml": claim("  storageClassName: fast\n")},
			[]string{"sc/pvc.yaml:7", "spec.storageClassName", "StorageClass fast is not in the scenario", "add a storage.k8s.io/v1 StorageClass fast"}},
		{"a claim template names no class and none is the default", map[string]string{"app.yaml": sts},
			[]string{"sc/app.yaml", "spec.volumeClaimTemplates[0].spec.storageClassName", "names no StorageClass, and none in the scenario is the default", "storageclass.kubernetes.io/is-default-class"}},
		{"a bound claim's volume is missing", map[string]string{"app.yaml": podWithClaim, "pvc.yaml": claim("  volumeName: pv-1\n")},
			[]string{"sc/pvc.yaml:7", "spec.volumeName", "PersistentVolume pv-1 is not in the scenario", "leave volumeName out"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"sc/pool.yaml": {Data: []byte(minimalPool)}}
			for name, body := range tc.files {
				fsys["sc/"+name] = &fstest.MapFile{Data: []byte(body)}
			}
			_, err := scenario.Load(fsys, "sc", "sc")
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
	// With the default class there, the template takes it.
	fsys := fstest.MapFS{"sc/pool.yaml": {Data: []byte(minimalPool)}, "sc/app.yaml": {Data: []byte(sts + "---\n" + gp3Class)}}
	in, err := scenario.Load(fsys, "sc", "sc")
	if err != nil {
		t.Fatal(err)
	}
	if c := in.StatefulSets[0].Spec.VolumeClaimTemplates[0].Spec.StorageClassName; c == nil || *c != "gp3" {
		t.Errorf("claim template class %v, want the default gp3", c)
	}
}

// The example's StatefulSet: each replica's claim is bound in the zone of
// the node it first ran on, and after the AMI drift has replaced every
// node, each replica runs in its volume's zone still.
func TestStatefulSetStaysWithItsVolumes(t *testing.T) {
	dir := "../../examples/scenarios/stateful-zones"
	in, err := scenario.Load(os.DirFS(dir), ".", "stateful-zones")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{time.Hour, 5 * time.Hour} {
		m, err := RunUntil(context.Background(), in, os.DirFS(dir), ".", in.Scenario.Spec.Start.Add(at), Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := m.Cluster
		zoneOfNode := map[string]string{}
		for _, n := range c.Nodes {
			zoneOfNode[n.Name] = n.Labels[v1.LabelZone]
		}
		zoneOfVolume := map[string]string{}
		for _, pv := range c.PersistentVolumes {
			zoneOfVolume[pv.Name] = pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0]
		}
		claims := map[string]*corev1.PersistentVolumeClaim{}
		for _, pvc := range c.PersistentVolumeClaims {
			claims[pvc.Namespace+"/"+pvc.Name] = pvc
		}
		zones, running := map[string]int{}, 0
		for _, p := range c.Pods {
			if p.Spec.NodeName == "" || len(p.Spec.Volumes) == 0 {
				continue
			}
			pvc := claims[p.Namespace+"/"+p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName]
			if pvc == nil || pvc.Spec.VolumeName == "" {
				t.Fatalf("at +%s: pod %s runs on a claim not bound: %+v", at, p.Name, pvc)
			}
			if nz, vz := zoneOfNode[p.Spec.NodeName], zoneOfVolume[pvc.Spec.VolumeName]; nz != vz {
				t.Errorf("at +%s: pod %s runs in %s, its volume %s is in %s", at, p.Name, nz, pvc.Spec.VolumeName, vz)
			}
			if strings.HasPrefix(p.Name, "db-") {
				zones[zoneOfNode[p.Spec.NodeName]]++
			}
			running++
		}
		if running != 7 || len(zones) != 3 {
			t.Errorf("at +%s: %d pods running (want 7: six db replicas and reports), db by zone %v (want all three)", at, running, zones)
		}
	}
}

// A claim of an Immediate class whose provisioner the simulator does not
// know holds its pod: it never runs, nothing is launched for it, and the
// report says why.
func TestImmediateClaimWaits(t *testing.T) {
	workloads := `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: efs}
provisioner: example.com/nfs
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: shared}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: efs
  resources: {requests: {storage: 1Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: warmer}
spec:
  replicas: 2
  selector: {matchLabels: {app: warmer}}
  template:
    metadata: {labels: {app: warmer}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
      volumes: [{name: cache, persistentVolumeClaim: {claimName: shared}}]
`
	rep, _ := runReportScenario(t, workloads)
	if rep.Pods.NeverRan != 2 || rep.Nodes.Launched != 0 {
		t.Fatalf("want both pods pending and no node launched, got %d never ran, %d nodes", rep.Pods.NeverRan, rep.Nodes.Launched)
	}
	const want = "waits for its volumes: PersistentVolumeClaim default/shared is unbound and StorageClass efs binds Immediate"
	for reason := range rep.Pods.NeverRanReason {
		if !strings.HasPrefix(reason, want) {
			t.Errorf("reason %q, want %q", reason, want)
		}
	}
}

// TestImmediateProvisioners: an Immediate class's claim is provisioned at
// once, before any pod asks — EFS's volume reaches every zone, so its pods
// run anywhere; an EBS volume is made in a zone the class allows, and its
// pod's node is launched there.
func TestImmediateProvisioners(t *testing.T) {
	const deployment = `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: CLAIM}}]
`
	dep := func(name, replicas, claim string) string {
		return strings.NewReplacer("NAME", name, "REPLICAS", replicas, "CLAIM", claim).Replace(deployment)
	}
	efs := `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: efs}
provisioner: efs.csi.aws.com
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: shared}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: efs
  resources: {requests: {storage: 1Gi}}
` + dep("warmer", "3", "shared")
	rep, _ := runReportScenario(t, efs)
	if rep.Pods.NeverRan != 0 || rep.Nodes.Launched == 0 {
		t.Errorf("EFS: %d pods never ran (%v), %d nodes: its provisioner makes a volume at once", rep.Pods.NeverRan, rep.Pods.NeverRanReason, rep.Nodes.Launched)
	}
	ebs := `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3-b}
provisioner: ebs.csi.aws.com
volumeBindingMode: Immediate
allowedTopologies:
  - matchLabelExpressions:
      - {key: topology.ebs.csi.aws.com/zone, values: [us-east-1b]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: db}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: gp3-b
  resources: {requests: {storage: 10Gi}}
` + dep("db", "1", "db")
	rep, _ = runReportScenario(t, ebs)
	if rep.Pods.NeverRan != 0 || rep.Nodes.Launched == 0 {
		t.Fatalf("EBS: %d pods never ran (%v), %d nodes", rep.Pods.NeverRan, rep.Pods.NeverRanReason, rep.Nodes.Launched)
	}
	for _, n := range rep.ByNode {
		if n.Zone != "us-east-1b" {
			t.Errorf("node %s in %s, want us-east-1b: the EBS volume's zone, as the class allows", n.Name, n.Zone)
		}
	}
}
