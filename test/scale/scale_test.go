//go:build scale

// Package scale is the scale benchmark of issue 25: a node autoscaler under
// test (harness.Autoscaler: Joiner's controller, and later upstream
// Karpenter's kwok controller) run as a process against a fresh cluster of
// real parts — kube-apiserver and etcd, kube-scheduler,
// kube-controller-manager, kwok — with one NodePool and four Deployments:
//
//	a. scale-out 0 → N pods: seconds until every pod runs, NodeClaims, $/h,
//	   pods seen Pending a minute or more after the scale-out;
//	b. hold for SCALE_HOLD: node changes, rounds of them, evictions, $/h;
//	c. scale-in to 30 %: seconds until the last node change (no NodeClaim
//	   created or deleted for SCALE_SETTLE), NodeClaims, $/h;
//	d. drift of every node (the template's label changed) under a 10 %
//	   budget: moments with more nodes disrupting than it allows, seconds
//	   until every node is replaced.
//
// Run it with hack/scale.sh (docs/scale.md).
package scale

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/test/harness"
)

func TestMain(m *testing.M) {
	crlog.SetLogger(zap.New(zap.WriteTo(io.Discard))) // envtest's; the autoscaler logs to its own file
	os.Exit(m.Run())
}

// config is the benchmark's environment.
type config struct {
	pods    int           // SCALE_PODS: the workload's pods at full size (a multiple of 4)
	hold    time.Duration // SCALE_HOLD: phase b
	settle  time.Duration // SCALE_SETTLE: no node change for this long ends phase c
	timeout time.Duration // SCALE_PHASE_TIMEOUT: the most a phase may take to converge
	// strict (SCALE_STRICT=1, as hack/test.sh runs the small size): a
	// budget violation or a phase that does not converge fails the run.
	strict bool
	// backtestStrict (SCALE_BACKTEST_STRICT=1): the backtest of the run's
	// recording must be within 5 % of its cost and 10 % of its node count.
	backtestStrict bool
	out            string   // SCALE_OUT: timelines, summaries, logs
	autoscalers    []string // SCALE_AUTOSCALERS
	// clientQPS (SCALE_CLIENT_QPS) is kube-scheduler's and
	// kube-controller-manager's client rate limit: at their defaults
	// (50 and 20) creating 1,000 pods, marking them unschedulable and
	// binding them would take most of a minute, and the autoscaler waits
	// for the scheduler's mark before it provisions for a pod.
	clientQPS int
	// kubeletWorkers (SCALE_KUBELET_WORKERS) is how many pods kwok, for
	// the kubelets, takes through a stage at once (nodes half as many):
	// kwok's default of four ran 5,000 bound pods over 76 s.
	kubeletWorkers int
	// profile (SCALE_PROFILE=1): Joiner runs with --enable-profiling, and
	// the harness takes its heap profile at each phase's end and each time
	// its resident memory grew by 8 MB (peak-heap.pprof), and a CPU profile
	// of the scale-out. Off, as a deployed controller runs: building a
	// profile allocates, and reads the binary's symbol tables, in the
	// process measured (session 33: 225.8 and 265.6 MB peaks with it).
	profile bool
}

func loadConfig(b *testing.B) config {
	b.Helper()
	c := config{pods: 100, settle: 3 * time.Minute, timeout: 20 * time.Minute, autoscalers: []string{"joiner", "karpenter"}, clientQPS: 500, kubeletWorkers: 32}
	if v := os.Getenv("SCALE_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 4 {
			b.Fatalf("SCALE_PODS=%q: want a number of pods, at least 4", v)
		}
		c.pods = n
	}
	c.hold = 10 * time.Minute
	if c.pods <= 200 {
		c.hold = 2 * time.Minute // the small size, for CI
	}
	for name, d := range map[string]*time.Duration{"SCALE_HOLD": &c.hold, "SCALE_SETTLE": &c.settle, "SCALE_PHASE_TIMEOUT": &c.timeout} {
		if v := os.Getenv(name); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil {
				b.Fatalf("%s=%q: %v", name, v, err)
			}
			*d = parsed
		}
	}
	// Phase c ends once no NodeClaim has changed for settle. A node is no
	// consolidation candidate until consolidateAfter after its last pod
	// event — the scale-in's deletions are such events — and a command
	// waits 15 s more for its validation: a shorter settle ends the phase
	// before consolidation can act, and measures nothing.
	if least := *nodePool().Spec.Disruption.ConsolidateAfter.Duration + time.Minute; c.settle < least {
		b.Fatalf("SCALE_SETTLE=%s: shorter than the NodePool's consolidateAfter (%s) and a minute for the scale-in's pods to go and a command's validation; phase c would end before consolidation acts (use at least %s)",
			c.settle, nodePool().Spec.Disruption.ConsolidateAfter.Duration, least)
	}
	if v := os.Getenv("SCALE_CLIENT_QPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("SCALE_CLIENT_QPS=%q: want requests a second, at least 1", v)
		}
		c.clientQPS = n
	}
	if v := os.Getenv("SCALE_KUBELET_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("SCALE_KUBELET_WORKERS=%q: want how many pods kwok runs at once, at least 1 (its own default is 4)", v)
		}
		c.kubeletWorkers = n
	}
	if v := os.Getenv("SCALE_AUTOSCALERS"); v != "" {
		c.autoscalers = strings.Split(v, ",")
	}
	c.strict = os.Getenv("SCALE_STRICT") == "1"
	c.profile = os.Getenv("SCALE_PROFILE") == "1"
	c.backtestStrict = os.Getenv("SCALE_BACKTEST_STRICT") == "1"
	c.out = os.Getenv("SCALE_OUT")
	if c.out == "" {
		dir, err := os.MkdirTemp("", "joiner-scale-")
		if err != nil {
			b.Fatal(err)
		}
		c.out = dir
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkScale runs the workload against each autoscaler in turn, each
// on a fresh cluster, and prints their results side by side.
func BenchmarkScale(b *testing.B) {
	cfg := loadConfig(b)
	b.Logf("pods %d, hold %s, settle %s, phase timeout %s, control-plane client QPS %d, kwok workers %d; timelines, summaries and logs in %s", cfg.pods, cfg.hold, cfg.settle, cfg.timeout, cfg.clientQPS, cfg.kubeletWorkers, cfg.out)
	var results []*result
	b.Run(fmt.Sprintf("pods=%d", cfg.pods), func(b *testing.B) {
		for _, name := range cfg.autoscalers {
			b.Run(name, func(b *testing.B) {
				as := autoscaler(b, name, cfg.profile)
				r := run(b, as, cfg)
				results = append(results, r)
				for _, m := range r.metrics {
					b.ReportMetric(m.value, m.name)
				}
			})
		}
	})
	if len(results) == 0 {
		return
	}
	table := sideBySide(results)
	for _, r := range results {
		fmt.Printf("\n%s(timeline, summary and logs: %s)\n", r.summary, r.dir)
	}
	fmt.Print(table)
	path := filepath.Join(cfg.out, fmt.Sprintf("results-%d.txt", cfg.pods))
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		b.Error(err)
	}
}

// autoscaler is the autoscaler under test of that name; it skips one that
// is not built.
func autoscaler(b *testing.B, name string, profile bool) harness.Autoscaler {
	b.Helper()
	switch name {
	case "joiner":
		var args []string
		if profile {
			args = append(args, "--enable-profiling")
		}
		j := harness.BuildJoiner(b, args...)
		j.Env = strings.Fields(os.Getenv("SCALE_JOINER_ENV"))
		return j
	case "karpenter":
		e, err := harness.ExternalFromEnv("karpenter", "KARPENTER_KWOK")
		if err != nil {
			b.Fatal(err)
		}
		if e == nil {
			b.Skip("upstream Karpenter's kwok controller: $KARPENTER_KWOK_BIN is not set (hack/karpenter.sh, when it lands, builds it; docs/scale.md)")
		}
		return e
	}
	b.Fatalf("SCALE_AUTOSCALERS: unknown autoscaler %q (known: joiner, karpenter)", name)
	return nil
}

// metric is one number of a result, named as b.ReportMetric prints it.
type metric struct {
	name  string
	value float64
}

// result is one autoscaler's run.
type result struct {
	autoscaler string
	pods       int
	metrics    []metric
	notes      []string
	summary    string
	dir        string
	// rec records the run for its backtest.
	rec *harness.Recording
}

func (r *result) add(name string, value float64) { r.metrics = append(r.metrics, metric{name, value}) }

// scrape is what the counters outside the observer said at one moment.
type scrape struct {
	evictions     float64            // the API server's successful pods/eviction calls
	evictionCalls map[string]float64 // all of them, by HTTP code
	requests      map[string]float64 // the autoscaler's rest_client_requests_total, by method
	decisions     map[string]float64 // karpenter_voluntary_disruption_decisions_total, by reason/decision/type
	usage         harness.Usage
}

func take(ctx context.Context, b *testing.B, c *harness.Cluster, p *harness.Process) scrape {
	b.Helper()
	var s scrape
	api, err := c.APIServerMetrics(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s.evictionCalls = harness.SumBy(api, "apiserver_request_total", "code", func(l map[string]string) bool {
		return l["resource"] == "pods" && l["subresource"] == "eviction"
	})
	for code, n := range s.evictionCalls {
		if strings.HasPrefix(code, "2") {
			s.evictions += n
		}
	}
	own, err := p.Metrics(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s.requests = harness.SumBy(own, "rest_client_requests_total", "method", nil)
	s.decisions = decisions(own)
	if s.usage, err = p.Usage(); err != nil {
		b.Fatal(err)
	}
	return s
}

// run is the four phases against one autoscaler on a fresh cluster.
func run(b *testing.B, as harness.Autoscaler, cfg config) *result {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &result{autoscaler: as.Name(), pods: cfg.pods}
	dir := filepath.Join(cfg.out, fmt.Sprintf("%s-%d", as.Name(), cfg.pods))
	cluster := harness.StartCluster(b, harness.ClusterOptions{CRDDirectories: as.CRDDirectories(), LogDir: filepath.Join(dir, "logs"), ClientQPS: cfg.clientQPS, KubeletWorkers: cfg.kubeletWorkers})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := v1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	kc, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	if err := as.Prepare(ctx, kc); err != nil {
		b.Fatal(err)
	}
	if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		b.Fatal(err)
	}
	np := nodePool()
	as.NodePool(np)
	if err := kc.Create(ctx, np); err != nil {
		b.Fatal(err)
	}
	var deployments []*appsv1.Deployment
	for _, s := range sizes {
		d := deployment(s)
		if err := kc.Create(ctx, d); err != nil {
			b.Fatal(err)
		}
		deployments = append(deployments, d)
	}
	r.rec = startRecording(b, cluster, dir)
	timeline := createFile(b, filepath.Join(dir, "timeline.txt"))
	samples := createFile(b, filepath.Join(dir, "timeline.csv"))
	summary := &strings.Builder{}
	fmt.Fprintf(summary, "%s, %d pods (%s)\n", as.Name(), cfg.pods, time.Now().Format(time.RFC3339))
	_, _ = fmt.Fprintf(timeline, "%s, %d pods: one row per change of the cluster (or every 30 s), events between (+ created, - deleting, x gone, ! budget)\n",
		as.Name(), cfg.pods)
	obs, err := startObserver(ctx, cluster, scheme, as.Price, timeline, samples)
	if err != nil {
		b.Fatal(err)
	}
	proc, err := as.Start(b, cluster)
	if err != nil {
		b.Fatal(err)
	}
	if err := proc.WaitMetrics(ctx, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	obs.note("%s started (pid %d)", as.Name(), proc.PID())
	go obs.watchDecisions(ctx, proc)
	if as.Name() == "joiner" {
		go watchPeak(ctx, b, proc, dir, cfg.profile)
	}
	start := take(ctx, b, cluster, proc)
	prev := start
	// endPhase reads the counters at a phase's end, adds what is common to
	// every phase and writes the phase's summary.
	endPhase := func(key string, ph *phase, s snapshot) {
		now := take(ctx, b, cluster, proc)
		if as.Name() == "joiner" && cfg.profile {
			if err := proc.SaveHeapProfile(ctx, filepath.Join(dir, key+"-heap.pprof")); err != nil {
				b.Logf("no heap profile after %s: %v", key, err)
			}
		}
		c := obs.counts(ph)
		evictions := now.evictions - prev.evictions
		r.add(key+"-nodeclaims", float64(s.claims))
		r.add(key+"-dollars/h", round(s.dollars, 3))
		r.add(key+"-evictions", evictions)
		r.add(key+"-budget-violations", float64(c.violations))
		if cfg.strict && c.violations > 0 {
			b.Errorf("%s, phase %s: %d budget violations (at most %d disrupting, by at most %d over the budget)", as.Name(), ph.name, c.violations, c.maxDisrupting, c.maxOver)
		}
		fmt.Fprintf(summary, "\nphase %s (%s): %d NodeClaims, $%.3f/h (%d unpriced); %d created, %d deleted (%d rounds, 30 s apart); %d pod evictions, %d pod deletions;\n"+
			"  budget: %d violations (%d snapshots over, by at most %d), at most %d disrupting; pods seen Pending ≥1 min into the phase: %d\n"+
			"  instance types: %s\n  eviction calls by HTTP code: %s\n  autoscaler: %.1f CPU s, peak RSS %.0f MB; API requests %s; disruption decisions %s\n",
			ph.name, time.Since(ph.start).Round(time.Second), s.claims, s.dollars, s.unpriced, c.created, c.deleting, bursts(c.changes, 30*time.Second),
			int(evictions), c.podDeletions, c.violations, c.overBudget, c.maxOver, c.maxDisrupting, obs.pendingAfter1m(ph),
			mix(s.instanceTypes), deltas(now.evictionCalls, prev.evictionCalls), now.usage.CPUSeconds-prev.usage.CPUSeconds, now.usage.PeakRSSBytes/1e6,
			deltas(now.requests, prev.requests), deltas(now.decisions, prev.decisions))
		obs.note("phase %s done: %s", ph.name, s.row())
		prev = now
	}
	timedOut := func(what string, d time.Duration) {
		msg := fmt.Sprintf("%s: not within %s (reported as -1)", what, d)
		r.notes = append(r.notes, msg)
		obs.note("TIMEOUT %s", msg)
		if cfg.strict {
			b.Errorf("%s: %s", as.Name(), msg)
		} else {
			b.Log(msg)
		}
	}

	// a. Scale-out.
	per := cfg.pods / len(sizes)
	want := per * len(sizes)
	ph := obs.begin("scale-out", fmt.Sprintf("0 → %d pods", want))
	if as.Name() == "joiner" && cfg.profile {
		// Where the controller's CPU goes while the scale-out is decided,
		// launched and bound (the time every pod takes to run).
		go func() {
			if err := proc.SaveCPUProfile(ctx, filepath.Join(dir, "a-cpu.pprof"), scaleOutProfile); err != nil {
				b.Logf("no CPU profile of the scale-out: %v", err)
			}
		}()
	}
	for _, d := range deployments {
		scaleTo(ctx, b, kc, d, int32(per))
	}
	// Bound (kube-scheduler gave every pod a node: what the autoscaler's
	// nodes allow), then Running (kwok, standing in for the kubelets, has
	// run them all).
	at, ok := obs.waitFor(ctx, cfg.timeout, func(s snapshot, _ time.Time) bool { return s.bound == want })
	seconds := at.Sub(ph.start).Seconds()
	if !ok {
		timedOut(fmt.Sprintf("every one of %d pods bound", want), cfg.timeout)
		seconds = -1
	}
	r.add("a-seconds-to-bound", round(seconds, 1))
	if ok {
		at, ok = obs.waitFor(ctx, cfg.timeout-time.Since(ph.start), func(s snapshot, _ time.Time) bool { return s.running == want && s.pending == 0 })
		seconds = at.Sub(ph.start).Seconds()
		if !ok {
			timedOut(fmt.Sprintf("every one of %d pods Running", want), cfg.timeout)
			seconds = -1
		}
	}
	r.add("a-seconds-to-running", round(seconds, 1))
	r.add("a-pods-pending-after-1m", float64(obs.pendingAfter1m(ph)))
	s, _ := obs.now()
	endPhase("a", ph, s)
	if !ok {
		return finish(b, r, summary, dir, cfg, start, prev)
	}

	// b. Hold.
	ph = obs.begin("hold", fmt.Sprintf("%d pods for %s", want, cfg.hold))
	select {
	case <-ctx.Done():
	case <-time.After(cfg.hold):
	}
	s, _ = obs.now()
	c := obs.counts(ph)
	r.add("b-node-changes", float64(c.created+c.deleting))
	r.add("b-change-rounds", float64(bursts(c.changes, 30*time.Second)))
	endPhase("b", ph, s)

	// c. Scale-in to 30 %.
	before := s.claims
	in := int(math.Round(0.3 * float64(per)))
	wantIn := in * len(sizes)
	ph = obs.begin("scale-in", fmt.Sprintf("%d → %d pods; settled after %s without a NodeClaim created or deleted", want, wantIn, cfg.settle))
	for _, d := range deployments {
		scaleTo(ctx, b, kc, d, int32(in))
	}
	_, ok = obs.waitFor(ctx, cfg.timeout+cfg.settle, func(s snapshot, last time.Time) bool {
		return s.running == wantIn && s.pending == 0 && s.deleting == 0 && s.at.Sub(later(last, ph.start)) >= cfg.settle
	})
	_, last := obs.now()
	seconds = later(last, ph.start).Sub(ph.start).Seconds()
	if !ok {
		timedOut("consolidation settled", cfg.timeout+cfg.settle)
		seconds = -1
	}
	r.add("c-seconds-to-settle", round(seconds, 1))
	// What the scale-in cost in its first spendWindow: a settle sooner at
	// a dearer $/h and a later one at a cheaper are set side by side.
	cin := obs.counts(ph)
	r.add(fmt.Sprintf("c-dollars-first-%dm", int(spendWindow.Minutes())), round(cin.spend(spendWindow), 3))
	s, _ = obs.now()
	// Its rounds, beside the fewest the NodePool's budget allows from the
	// nodes before it to those after: each round waits out a validation
	// (15 s) and its nodes' deletion, so they bound how soon it settles.
	r.add("c-rounds", float64(bursts(cin.changes, roundGap)))
	var pool v1.NodePool
	if err := kc.Get(ctx, client.ObjectKey{Name: poolName}, &pool); err != nil {
		b.Fatal(err)
	}
	r.add("c-rounds-fewest", float64(fewestRounds(&pool, before, s.claims)))
	endPhase("c", ph, s)

	// d. Drift every node under a budget of 10 %.
	ph = obs.begin("drift", fmt.Sprintf("the NodePool's template label %s a → b, budget nodes 10%%", revLabel))
	if err := kc.Get(ctx, client.ObjectKey{Name: poolName}, &pool); err != nil {
		b.Fatal(err)
	}
	patch := client.MergeFrom(pool.DeepCopy())
	pool.Spec.Template.Labels[revLabel] = "b"
	pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "10%"}}
	if err := kc.Patch(ctx, &pool, patch); err != nil {
		b.Fatal(err)
	}
	at, ok = obs.waitFor(ctx, cfg.timeout, func(s snapshot, _ time.Time) bool {
		return s.claims > 0 && s.claimsOfRev["b"] == s.claims && s.deleting == 0 && s.running == wantIn && s.pending == 0
	})
	seconds = at.Sub(ph.start).Seconds()
	if !ok {
		timedOut("every node replaced by one of the new template", cfg.timeout)
		seconds = -1
	}
	r.add("d-seconds-to-drifted", round(seconds, 1))
	c = obs.counts(ph)
	r.add("d-max-disrupting", float64(c.maxDisrupting))
	s, _ = obs.now()
	endPhase("d", ph, s)
	return finish(b, r, summary, dir, cfg, start, prev)
}

// finish adds the whole run's numbers and writes the summary.
func finish(b *testing.B, r *result, summary *strings.Builder, dir string, cfg config, start, end scrape) *result {
	b.Helper()
	backtest(b, r.rec, r, summary, dir, cfg)
	r.add("ctl-peak-rss-MB", round(end.usage.PeakRSSBytes/1e6, 1))
	r.add("ctl-cpu-seconds", round(end.usage.CPUSeconds-start.usage.CPUSeconds, 1))
	total := 0.0
	for _, method := range sortedKeys(end.requests) {
		n := end.requests[method] - start.requests[method]
		r.add("api-"+method, n)
		total += n
	}
	r.add("api-requests", total)
	fmt.Fprintf(summary, "\nwhole run: autoscaler %.1f CPU s, peak RSS %.0f MB (at the end %.0f MB, %.0f MB of it pages of files: its binary); API requests %s\n",
		end.usage.CPUSeconds-start.usage.CPUSeconds, end.usage.PeakRSSBytes/1e6, end.usage.RSSBytes/1e6, end.usage.RSSFileBytes/1e6, deltas(end.requests, start.requests))
	for _, n := range r.notes {
		fmt.Fprintf(summary, "NOTE: %s\n", n)
	}
	fmt.Fprintln(summary, "\nmetrics:")
	for _, m := range r.metrics {
		fmt.Fprintf(summary, "  %-26s %g\n", m.name, m.value)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary.String()), 0o644); err != nil {
		b.Error(err)
	}
	r.summary, r.dir = summary.String(), dir
	b.Logf("timeline, summary and logs in %s", dir)
	return r
}

func scaleTo(ctx context.Context, b *testing.B, kc client.Client, d *appsv1.Deployment, replicas int32) {
	b.Helper()
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	if err := kc.Patch(ctx, d, patch); err != nil {
		b.Fatalf("scaling %s to %d: %v", d.Name, replicas, err)
	}
}

func createFile(b *testing.B, path string) *os.File {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	return f
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// deltas writes now − before per key, leaving out zeros.
func deltas(now, before map[string]float64) string {
	var parts []string
	for _, k := range sortedKeys(now) {
		if d := now[k] - before[k]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s %g", k, d))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// mix is the instance types and their counts, most first.
func mix(types map[string]int) string {
	keys := sortedKeys(types)
	sort.SliceStable(keys, func(i, j int) bool { return types[keys[i]] > types[keys[j]] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, types[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// sideBySide is the results as a table, one column per autoscaler.
func sideBySide(results []*result) string {
	var names []string
	values := map[string]map[string]float64{}
	for _, r := range results {
		for _, m := range r.metrics {
			if values[m.name] == nil {
				values[m.name] = map[string]float64{}
				names = append(names, m.name)
			}
			values[m.name][r.autoscaler] = m.value
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-26s", fmt.Sprintf("scale, %d pods", results[0].pods))
	for _, r := range results {
		fmt.Fprintf(&sb, " %14s", r.autoscaler)
	}
	sb.WriteString("\n")
	for _, n := range names {
		fmt.Fprintf(&sb, "%-26s", n)
		for _, r := range results {
			if v, ok := values[n][r.autoscaler]; ok {
				fmt.Fprintf(&sb, " %14g", v)
			} else {
				fmt.Fprintf(&sb, " %14s", "-")
			}
		}
		sb.WriteString("\n")
	}
	for _, r := range results {
		for _, n := range r.notes {
			fmt.Fprintf(&sb, "%s: %s\n", r.autoscaler, n)
		}
	}
	return sb.String()
}

// scaleOutProfile is how much of the scale-out a-cpu.pprof profiles: at
// 5,000 pods, the minute and a half in which the nodes are launched and
// registered and kube-scheduler binds the pods.
const scaleOutProfile = 90 * time.Second

// spendWindow is how long after the scale-in began its cost is summed
// (c-dollars-first-10m): longer than either autoscaler has taken to
// settle at 1,000 pods.
const spendWindow = 10 * time.Minute

// watchPeak keeps, in peak-metrics.txt and (profile) peak-heap.pprof, the
// controller's metrics (the Go runtime's memory among them) and heap
// profile from the moment its resident memory was highest: the heap
// profiles after each phase show what stays, not what sets the peak RSS.
func watchPeak(ctx context.Context, b *testing.B, proc *harness.Process, dir string, profile bool) {
	const every, step = time.Second, 8e6 // anew once RSS grew by 8 MB
	high := 0.0
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		u, err := proc.Usage()
		if err != nil || u.RSSBytes < high+step {
			continue
		}
		high = u.RSSBytes
		if profile {
			if err := proc.SaveHeapProfile(ctx, filepath.Join(dir, "peak-heap.pprof")); err != nil {
				b.Logf("no heap profile at RSS %.0f MB: %v", high/1e6, err)
				continue
			}
		}
		if err := proc.SaveMetrics(ctx, filepath.Join(dir, "peak-metrics.txt")); err != nil {
			b.Logf("no metrics at RSS %.0f MB: %v", high/1e6, err)
		}
	}
}
