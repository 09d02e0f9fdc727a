//go:build integration

package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// secrets are what the recorded pod is full of; none may reach the trace.
var secrets = []string{"env-s3cr3t", "secret-ref-s3cr3t", "cmd-s3cr3t", "arg-s3cr3t", "registry.example/secret-image", "ann-s3cr3t",
	"cm-s3cr3t", "secret-data-s3cr3t", "probe-s3cr3t", "mount-s3cr3t", "event-s3cr3t"}

// TestRecordKeepsWhatSchedulingNeedsAndNoSecrets: a recording of a live
// API server writes a pod's arrival, binding and deletion and a Node's
// arrival, with the pod's requests, tolerations, affinity, volumes by
// claim and Karpenter's annotation — and not one of the secrets the pod,
// its Secret and its ConfigMap hold (environment, commands, arguments,
// image, annotations, secret and ConfigMap volumes, probes, mounts). Of
// the Events, it writes an interruption's on a NodeClaim, without its
// message, and no other. A recording cut short by its context ends
// cleanly.
func TestRecordKeepsWhatSchedulingNeedsAndNoSecrets(t *testing.T) {
	ctx := context.Background()
	scheme, err := trace.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "recorded"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns.Name}, StringData: map[string]string{"password": "secret-data-s3cr3t"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf", Namespace: ns.Name}, Data: map[string]string{"key": "cm-s3cr3t"}}
	for _, o := range []client.Object{secret, cm} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	var buf lockedBuffer
	rctx, stop := context.WithCancel(ctx)
	rec, err := trace.Start(rctx, c, &buf, trace.Options{Namespace: ns.Name, Selector: labels.SelectorFromSet(labels.Set{"app": "web"}),
		Server: cfg.Host, FlushEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Run(rctx) }()

	zero := int64(0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns.Name, Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{"vault.example/secret": "ann-s3cr3t", "karpenter.sh/do-not-disrupt": "true"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero,
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone",
					Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}}}}}}}},
			Volumes: []corev1.Volume{
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-1"}}}},
			Containers: []corev1.Container{{Name: "web", Image: "registry.example/secret-image:1", Command: []string{"serve", "--token=cmd-s3cr3t"},
				Args: []string{"arg-s3cr3t"},
				Env: []corev1.EnvVar{{Name: "PASSWORD", Value: "env-s3cr3t"},
					{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "secret-ref-s3cr3t"}, Key: "password"}}}},
				VolumeMounts:  []corev1.VolumeMount{{Name: "creds", MountPath: "/mount-s3cr3t"}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"probe-s3cr3t"}}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("750m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}},
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}}}}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch-1", Namespace: ns.Name, Labels: map[string]string{"app": "batch"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "recorded-node", Labels: map[string]string{"topology.kubernetes.io/zone": "us-east-1a"},
		Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "karpenter.sh/nodepool-hash": "123"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://recorded-node"}}
	now := metav1.Now()
	event := func(name, kind, reason string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceDefault},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: "recorded-claim"}, Reason: reason, Type: corev1.EventTypeWarning,
			Message: "instance i-0123 event-s3cr3t", FirstTimestamp: now, LastTimestamp: now, Count: 1, Source: corev1.EventSource{Component: "test"}}
	}
	interrupted := event("recorded-claim.interrupted", "NodeClaim", "SpotInterrupted")
	events := []client.Object{interrupted, event("recorded-claim.blocked", "NodeClaim", "DisruptionBlocked"), event("recorded-claim.pod", "Pod", "SpotInterrupted")}
	for _, o := range append([]client.Object{pod, other, node}, events...) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SubResource("binding").Create(ctx, pod, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// batch-1 never binds; deleted with its namespace only when the
		// namespace controller gets to it, a later test's kube-scheduler
		// could place it on that test's Node in the meantime.
		_ = c.Delete(context.Background(), other, client.GracePeriodSeconds(0))
		_ = c.Delete(context.Background(), node)
		_ = c.Delete(context.Background(), ns)
		for _, e := range events {
			_ = c.Delete(context.Background(), e)
		}
	}()
	// Wait until the recording has seen the deletion, reading the trace as
	// it is flushed.
	eventually(t, "the pod's deletion and the interruption recorded", func(context.Context) (bool, error) {
		raw := buf.decompressed()
		return bytes.Contains(raw, []byte(`"op":"delete","kind":"Pod"`)) && bytes.Contains(raw, []byte(interrupted.Name)), nil
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	raw := buf.decompressed()
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the trace holds %q", s)
		}
	}
	r, err := trace.NewReader(bytes.NewReader(buf.bytes()), "trace")
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Namespace != ns.Name || r.Header.Selector != "app=web" || !slices.Contains(r.Header.Kinds, "Pod") || !slices.Contains(r.Header.Kinds, "NodeClaim") {
		t.Errorf("header %+v", r.Header)
	}
	var ops []string
	var last trace.Record
	sawInterruption := false
	recs, err := r.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		last = rec
		if rec.Object == nil {
			continue // a sync's start or end
		}
		switch rec.Kind {
		case "Pod":
			var p corev1.Pod
			if err := json.Unmarshal(rec.Object, &p); err != nil {
				t.Fatal(err)
			}
			if p.Name != "web-1" {
				t.Errorf("recorded pod %s, which the selector leaves out", p.Name)
				continue
			}
			ops = append(ops, string(rec.Op)+"@"+p.Spec.NodeName)
			c := p.Spec.Containers[0]
			if c.Resources.Requests.Cpu().MilliValue() != 750 || c.Resources.Limits.Memory().String() != "2Gi" || p.Spec.Tolerations[0].Key != "dedicated" ||
				p.Spec.Affinity == nil || len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim == nil ||
				c.Ports[0].HostPort != 8080 || p.Annotations["karpenter.sh/do-not-disrupt"] != "true" || len(p.Annotations) != 1 {
				t.Errorf("the recorded pod lacks what scheduling needs: %s", rec.Object)
			}
		case "Node":
			var n corev1.Node
			if err := json.Unmarshal(rec.Object, &n); err != nil {
				t.Fatal(err)
			}
			if n.Name == node.Name && (n.Spec.ProviderID != node.Spec.ProviderID || n.Labels["topology.kubernetes.io/zone"] != "us-east-1a" ||
				len(n.Annotations) != 1) {
				t.Errorf("recorded node %+v", n)
			}
		case "Event":
			var e corev1.Event
			if err := json.Unmarshal(rec.Object, &e); err != nil {
				t.Fatal(err)
			}
			if !trace.IsInterruption(&e) {
				t.Errorf("recorded the Event %s (%s on a %s): only interruptions of NodeClaims are", e.Name, e.Reason, e.InvolvedObject.Kind)
			}
			if e.Name == interrupted.Name {
				sawInterruption = true
				if e.InvolvedObject.Name != "recorded-claim" || e.FirstTimestamp.IsZero() || e.Message != "" {
					t.Errorf("the recorded interruption: %s", rec.Object)
				}
			}
		}
	}
	if !sawInterruption {
		t.Error("the NodeClaim's SpotInterrupted Event is not in the trace")
	}
	if got := strings.Join(ops, " "); !strings.HasPrefix(got, "add@ ") || !strings.Contains(got, "update@recorded-node") || !strings.HasSuffix(got, "delete@recorded-node") {
		t.Errorf("the pod's records: %s; want its arrival, binding and deletion", got)
	}
	if last.Op != trace.OpEnd {
		t.Errorf("the last record is %q, want %q", last.Op, trace.OpEnd)
	}
}

// lockedBuffer is a bytes.Buffer the recorder writes to while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

// decompressed is what has been flushed so far, uncompressed (a stream cut
// mid-member reads as far as it goes).
func (b *lockedBuffer) decompressed() []byte {
	zr, err := gzip.NewReader(bytes.NewReader(b.bytes()))
	if err != nil {
		return nil
	}
	out, _ := io.ReadAll(zr)
	return out
}
