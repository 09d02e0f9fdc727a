//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// TestRecorderGapOnRealExpiry: a real API server ends the recorder's pod
// watch and, when it resumes, answers 410 Gone, because etcd compacted the
// resourceVersion it resumes at. The trace says so as a gap at that
// resourceVersion, lists the pods again, and records the pod created after
// it: nothing is lost and nothing is papered over.
//
// Its own API server: watches served from etcd, not the watch cache (whose
// window, not etcd's compaction, would decide), ended after a second or
// two (--min-request-timeout=1), and etcd compacted every second.
func TestRecorderGapOnRealExpiry(t *testing.T) {
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "pkg", "apis", "crds")}, ErrorIfCRDPathMissing: true}
	api := env.ControlPlane.GetAPIServer().Configure()
	api.Set("watch-cache", "false")
	api.Set("min-request-timeout", "1")
	api.Set("etcd-compaction-interval", "1s")
	gcfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	scheme, err := trace.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(gcfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gap"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	newPod := func(name string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	var buf lockedBuffer
	rctx, stop := context.WithCancel(ctx)
	rec, err := trace.Start(rctx, c, &buf, trace.Options{Namespace: ns.Name, Server: gcfg.Host, FlushEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Run(rctx) }()

	records := func() []trace.Record {
		t.Helper()
		r, err := trace.NewReader(bytes.NewReader(buf.bytes()), "trace")
		if err != nil {
			t.Fatal(err)
		}
		recs, err := r.All()
		if err != nil && !strings.Contains(err.Error(), "EOF") {
			t.Fatal(err)
		}
		return recs
	}
	podGap := func() *trace.Record {
		for _, r := range records() {
			if r.Kind == "Pod" && r.Op == trace.OpGap {
				return &r
			}
		}
		return nil
	}
	newPod("before")
	// Write other objects (the recorder watches no ConfigMap) so etcd's
	// revision moves past the pod's, and wait for the compaction to
	// overtake the pod watch's resourceVersion and its resume to fail.
	var gap *trace.Record
	for i := 0; gap == nil; i++ {
		if ctx.Err() != nil {
			t.Fatalf("no gap in the pod watch after %d writes: the API server never answered 410", i)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bump-%d", i), Namespace: "default"}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		select {
		case <-time.After(200 * time.Millisecond): // the server's compaction has its own clock
		case err := <-done:
			t.Fatalf("the recorder stopped: %v", err)
		}
		gap = podGap()
	}
	if gap.Gap == nil || gap.Gap.From == "" || !strings.Contains(strings.ToLower(gap.Gap.Why), "too old") {
		t.Errorf("gap record %+v: want the resourceVersion it could not resume at and the server's words", gap.Gap)
	}
	newPod("after")
	for {
		ops := podOps(records())
		if strings.Contains(ops, "add:after") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pod created after the gap was never recorded: %s", ops)
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ops := podOps(records())
	// The pod, listed or watched (the first list may or may not meet it),
	// the first gap, then the relist: sync, the pod that was there, synced.
	i := strings.Index(ops, "gap ")
	if i < 0 || !(strings.HasPrefix(ops, "sync synced add:before gap") || strings.HasPrefix(ops, "sync add:before synced gap")) || !strings.HasPrefix(ops[i:], "gap sync add:before synced") || !strings.HasSuffix(ops, "add:after end") {
		t.Errorf("pod records %q: want the add, a gap, a relist of the pod that was there, then the new pod", ops)
	}
	t.Logf("pod records: %s (gap at %s: %s)", ops, gap.Gap.From, gap.Gap.Why)
}

// podOps is the trace's pod records and its end, as "op:name" words.
func podOps(recs []trace.Record) string {
	var out []string
	for _, r := range recs {
		if r.Kind != "Pod" && r.Op != trace.OpEnd {
			continue
		}
		s := string(r.Op)
		if r.Object != nil {
			if _, rest, ok := bytes.Cut(r.Object, []byte(`"name":"`)); ok {
				name, _, _ := bytes.Cut(rest, []byte(`"`))
				s += ":" + string(name)
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}
