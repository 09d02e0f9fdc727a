//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// BenchmarkRecord10kPods: issue 27's memory goal for `joiner record` — a
// cluster of 10,000 pods listed, then every pod changed once, recorded on
// the real API server. peak-heap-MiB is the most the process's Go heap held
// above what it held before the recording (sampled every 20 ms); the
// recorder streams, so it stays flat however many pods there are. Run it
// alone:
//
//	go test -tags integration -run '^$' -bench BenchmarkRecord10kPods -benchtime 1x ./test/integration/
func BenchmarkRecord10kPods(b *testing.B) {
	const pods = 10000
	ctx := context.Background()
	scheme, err := trace.Scheme()
	if err != nil {
		b.Fatal(err)
	}
	fast := *cfg
	fast.QPS, fast.Burst = 2000, 4000
	c, err := client.NewWithWatch(&fast, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	ns := fmt.Sprintf("recorded-%d", time.Now().UnixNano()%100000)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	each := func(do func(i int) error) {
		var wg sync.WaitGroup
		var failed atomic.Value
		next := atomic.Int64{}
		for w := 0; w < 32; w++ {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < pods; i = int(next.Add(1)) - 1 {
					if err := do(i); err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
	}
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	each(func(i int) error {
		return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: ns, Labels: map[string]string{"app": fmt.Sprintf("a%d", i%100)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Requests: req}}}}})
	})
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		var peak atomic.Uint64
		stopSampling := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
				select {
				case <-stopSampling:
					return
				case <-t.C:
				}
			}
		}()
		path := filepath.Join(b.TempDir(), "10k.trace.gz")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		rec, err := trace.Start(rctx, c, f, trace.Options{Namespace: ns, Server: cfg.Host})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- rec.Run(rctx) }()
		each(func(i int) error { // every pod changes once while it records
			patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, n))
			return c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Namespace: ns}}, client.RawPatch(types.MergePatchType, patch))
		})
		time.Sleep(2 * time.Second) // the last events reach the watch
		stop()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		close(stopSampling)
		<-sampled
		_ = f.Close()
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(peak.Load()-min(base, peak.Load()))/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(st.Size())/(1<<20), "trace-MiB")
		b.ReportMetric(wall.Seconds(), "record-wall-s")
		r, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		tr, err := trace.NewReader(r, path)
		if err != nil {
			b.Fatal(err)
		}
		recs, err := tr.All()
		_ = r.Close()
		if err != nil {
			b.Fatal(err)
		}
		seen := map[string]bool{}
		for _, rc := range recs {
			if rc.Kind == "Pod" {
				seen[string(rc.Op)] = true
			}
		}
		if len(recs) < 2*pods || !seen["add"] || !seen["update"] {
			b.Fatalf("%d records (ops %v): want the %d pods listed and each changed", len(recs), seen, pods)
		}
		b.ReportMetric(float64(len(recs)), "records")
	}
}
