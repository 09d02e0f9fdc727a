package trace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchStub is an API server's side of the pod watches, scripted: each
// Watch call of pods takes the next script (events, then the channel
// closes unless the script ends in a block); other kinds list empty and
// watch nothing.
type watchStub struct {
	client.WithWatch
	mu      sync.Mutex
	lists   int
	scripts [][]watch.Event
	watched []string // the resourceVersions pod watches began at
	// third is closed when the third pod watch begins.
	third chan struct{}
}

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", ResourceVersion: rv}}
}

func (s *watchStub) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	pl, ok := list.(*corev1.PodList)
	if !ok {
		return nil
	}
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	if lo.Limit == 1 && lo.Continue == "" {
		return nil // Start's probe
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	pl.ResourceVersion = fmt.Sprint(10 * s.lists)
	pl.Items = []corev1.Pod{*pod("a", "1")}
	if s.lists > 1 {
		pl.Items = append(pl.Items, *pod("b", "11"))
	}
	return nil
}

func (s *watchStub) Watch(_ context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	if _, ok := list.(*corev1.PodList); !ok {
		return watch.NewFake(), nil // never sends; stopped by the recorder
	}
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watched = append(s.watched, lo.Raw.ResourceVersion)
	if len(s.watched) == 3 {
		close(s.third)
	}
	if len(s.scripts) == 0 {
		return watch.NewFake(), nil
	}
	script := s.scripts[0]
	s.scripts = s.scripts[1:]
	w := watch.NewFakeWithChanSize(len(script), false)
	for _, ev := range script {
		w.Action(ev.Type, ev.Object)
	}
	w.Stop() // the server ends the watch after the script
	return w, nil
}

// TestRecorderResumesAndRecordsGaps: a watch the server ends resumes at the
// last resourceVersion seen, losing nothing and writing no gap; a watch
// whose resourceVersion expired (410) is written as a gap, and the kind is
// listed again between sync and synced.
func TestRecorderResumesAndRecordsGaps(t *testing.T) {
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 11 (30)"}
	stub := &watchStub{third: make(chan struct{}), scripts: [][]watch.Event{
		{{Type: watch.Added, Object: pod("b", "11")}}, // then the server ends the watch
		{{Type: watch.Error, Object: gone}},           // resumed at 11: expired
	}}
	clk := clocktesting.NewFakeClock(t0)
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	rec, err := Start(ctx, stub, &safeWriter{w: &buf}, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	// The third pod watch (after the relist) begins; then stop.
	select {
	case err := <-done:
		t.Fatalf("Run ended early: %v", err)
	case <-stub.third:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(stub.watched, ","); got != "10,11,20" {
		t.Errorf("pod watches began at %s, want 10 (the list), 11 (resumed), 20 (the relist after the gap)", got)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), "t")
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	recs, err := r.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Kind != "Pod" && rec.Op != OpEnd {
			continue
		}
		s := string(rec.Op)
		if rec.Gap != nil {
			s += "(" + rec.Gap.From + ")"
		}
		if rec.Object != nil {
			s += ":" + string(bytes.Split(bytes.SplitN(rec.Object, []byte(`"name":"`), 2)[1], []byte(`"`))[0])
		}
		pods = append(pods, s)
	}
	want := "sync add:a synced add:b gap(11) sync add:a add:b synced end"
	if got := strings.Join(pods, " "); got != want {
		t.Errorf("pod records %q, want %q", got, want)
	}
}

// safeWriter lets the test read what the recorder wrote after Run.
type safeWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
