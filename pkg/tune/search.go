package tune

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

// Plan is a space over a loaded scenario, checked and ready to run.
type Plan struct {
	In    *scenario.Input
	FS    fs.FS
	Dir   string
	Space *Space
	Dims  []Dimension
	t     *targets
}

// NewPlan checks the space against the scenario in (loaded from fsys at
// dir by scenario.Load).
func NewPlan(in *scenario.Input, fsys fs.FS, dir string, space *Space) (*Plan, error) {
	t, err := readTargets(fsys, dir)
	if err != nil {
		return nil, err
	}
	dims := space.dimensions()
	if err := space.check(t, dims); err != nil {
		return nil, err
	}
	for i := range dims {
		dims[i].Input = slices.IndexFunc(dims[i].Alternatives, t.unchanged)
	}
	return &Plan{In: in, FS: fsys, Dir: dir, Space: space, Dims: dims, t: t}, nil
}

// Options of a search; zero values take the space's search settings.
type Options struct {
	MaxVariants int
	Samples     int
	Sampler     string
	SampleSeed  *int64
	Seeds       int
	// Workers run variants in parallel; results do not depend on how many.
	Workers int
	// Sim are the engine's options for every run (Progress is not used).
	Sim sim.Options
	// Progress, if set, is told of every run finished, of how many so far
	// planned.
	Progress func(done, total int)
}

// resolved fills o's zero values from the space and the defaults.
func (p *Plan) resolved(o Options) Options {
	s := p.Space.Spec.Search
	if o.MaxVariants == 0 {
		o.MaxVariants = s.MaxVariants
	}
	if o.MaxVariants == 0 {
		o.MaxVariants = 64
	}
	if o.Samples == 0 {
		o.Samples = s.Samples
	}
	if o.Samples == 0 {
		o.Samples = o.MaxVariants
	}
	if o.Sampler == "" {
		o.Sampler = s.Sampler
	}
	if o.Sampler == "" {
		o.Sampler = SamplerLatinHypercube
	}
	if o.SampleSeed == nil {
		o.SampleSeed = s.Seed
	}
	if o.SampleSeed == nil {
		seed := p.In.Scenario.Spec.Seed
		o.SampleSeed = &seed
	}
	if o.Seeds == 0 {
		o.Seeds = s.Seeds
	}
	if o.Seeds == 0 {
		o.Seeds = 3
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	return o
}

// Variant is one point of the space: an alternative index per knob, nil
// for the baseline (the scenario as it is).
type Variant struct {
	Index  int
	Choice []int
}

// Size is how many variants the space holds (saturating at MaxInt).
func (p *Plan) Size() int {
	n := 1
	for _, d := range p.Dims {
		if n > math.MaxInt/len(d.Alternatives) {
			return math.MaxInt
		}
		n *= len(d.Alternatives)
	}
	return n
}

// Variants are the baseline (index 0) and the variants a search runs:
// every one of a space of at most MaxVariants, else Samples drawn by the
// sampler. The same options give the same list, which is what lets a Job's
// pods each take one by index.
func (p *Plan) Variants(o Options) (vs []Variant, sampled bool) {
	o = p.resolved(o)
	vs = []Variant{{Index: 0}}
	size := p.Size()
	var choices [][]int
	if size <= o.MaxVariants {
		for k := range size {
			c := make([]int, len(p.Dims))
			for i := len(p.Dims) - 1; i >= 0; i-- {
				n := len(p.Dims[i].Alternatives)
				c[i] = k % n
				k /= n
			}
			choices = append(choices, c)
		}
	} else {
		sampled = true
		rng := rand.New(rand.NewPCG(uint64(*o.SampleSeed), 0x7475_6e65))
		choices = sample(rng, p.Dims, o.Samples, o.Sampler)
	}
	for i, c := range choices {
		vs = append(vs, Variant{Index: i + 1, Choice: c})
	}
	return vs, sampled
}

// sample draws n distinct variants: a Latin hypercube spreads each knob's
// alternatives evenly over the samples; random draws each independently.
func sample(rng *rand.Rand, dims []Dimension, n int, sampler string) [][]int {
	cols := make([][]int, len(dims))
	for d, dim := range dims {
		k := len(dim.Alternatives)
		cols[d] = make([]int, n)
		if sampler == SamplerRandom {
			for i := range n {
				cols[d][i] = rng.IntN(k)
			}
			continue
		}
		perm := rng.Perm(n)
		for i := range n {
			cols[d][i] = int((float64(perm[i]) + rng.Float64()) / float64(n) * float64(k))
		}
	}
	seen := map[string]bool{}
	var out [][]int
	for i := range n {
		c := make([]int, len(dims))
		for d := range dims {
			c[d] = cols[d][i]
		}
		if k := fmt.Sprint(c); !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

// Settings are the variant's knob values, in the space's order.
func (p *Plan) Settings(v Variant) []Setting {
	if v.Choice == nil {
		return nil
	}
	out := make([]Setting, len(p.Dims))
	for i, d := range p.Dims {
		out[i] = Setting{Knob: d.Knob, Value: d.Labels[v.Choice[i]]}
	}
	return out
}

// Edits are the variant's edits of the scenario's documents.
func (p *Plan) Edits(v Variant) []Edit {
	var out []Edit
	for i, c := range v.Choice {
		out = append(out, p.Dims[i].Alternatives[c]...)
	}
	return out
}

// Run simulates one variant with the scenario's seed plus offset, over
// horizon (0: the scenario's duration), until ctx ends.
func (p *Plan) Run(ctx context.Context, v Variant, seedOffset int64, horizon time.Duration, o sim.Options) (Metrics, error) {
	in, err := p.t.withEdits(p.In, p.Edits(v))
	if err != nil {
		return Metrics{}, err
	}
	in.Scenario.Spec.Seed += seedOffset
	if horizon > 0 {
		in.Scenario.Spec.Duration.Duration = horizon
	}
	o.Progress, o.NoBufferBaseline = nil, true // a variant is measured by its own figures
	r, err := sim.Run(ctx, in, p.FS, p.Dir, o)
	if err != nil {
		return Metrics{}, err
	}
	return MetricsOf(r), nil
}

// run is one simulation of a search.
type run struct {
	v       Variant
	seed    int64
	horizon time.Duration
	m       Metrics
	err     error
}

// runAll runs the simulations on a pool of workers; each result lands in
// its own slot, so the outcome is the same for any number of workers. When
// ctx ends, the runs under way stop, no more start, and it returns ctx's
// cause.
func (p *Plan) runAll(ctx context.Context, runs []run, o Options, done *int, total int) error {
	var mu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(o.Workers, len(runs)) {
		wg.Go(func() {
			for i := range next {
				r := &runs[i]
				if ctx.Err() != nil {
					continue
				}
				r.m, r.err = p.Run(ctx, r.v, r.seed, r.horizon, o.Sim)
				if o.Progress != nil {
					mu.Lock()
					*done++
					o.Progress(*done, total)
					mu.Unlock()
				}
			}
		})
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("the search stopped: %w", context.Cause(ctx))
	}
	return nil
}

// Search runs the space: every variant, or a sample thinned by successive
// halving over a quarter, a half and the whole of the scenario's duration
// (keeping the better half each time); then the finalists — the Pareto
// front of the variants meeting the constraints, and the baseline — over
// o.Seeds seeds, the choice made on their means.
//
// It stops with ctx's cause when ctx ends. Like sim.Run it leaves
// process-wide settings (the GC percentage) to the command.
func (p *Plan) Search(ctx context.Context, o Options) (*Result, error) {
	o = p.resolved(o)
	vs, sampled := p.Variants(o)
	full := p.In.Scenario.Spec.Duration.Duration
	var horizons []time.Duration
	if sampled {
		for _, f := range []time.Duration{4, 2} {
			if h := full / f; h >= time.Hour {
				horizons = append(horizons, h)
			}
		}
	}
	horizons = append(horizons, full)
	done, total := 0, 0
	for i, n := 0, len(vs)-1; i < len(horizons); i, n = i+1, (n+1)/2 {
		total += n
	}
	total += 1 + (o.Seeds-1)*min(len(vs), 8) // an estimate: the finalists are not known yet
	info := SearchInfo{Mode: "exhaustive", SpaceSize: p.Size(), Sampler: "", Seeds: o.Seeds}
	if sampled {
		info.Mode, info.Sampler, info.SampleSeed, info.Samples = "sampled", o.Sampler, *o.SampleSeed, len(vs)-1
	}
	cands := vs[1:]
	for i, h := range horizons {
		runs := make([]run, len(cands))
		for j, v := range cands {
			runs[j] = run{v: v, horizon: h}
		}
		if i == len(horizons)-1 {
			runs = append([]run{{v: vs[0], horizon: h}}, runs...)
		}
		if err := p.runAll(ctx, runs, o, &done, total); err != nil {
			return nil, err
		}
		info.Rungs = append(info.Rungs, Rung{Horizon: horizon(h), Variants: len(cands)})
		if i == len(horizons)-1 {
			results := make([]VariantResult, len(runs))
			for j, r := range runs {
				results[j] = p.result(r.v, r.m, r.err)
			}
			return p.finish(ctx, results, info, o, &done, total)
		}
		ms := make([]Metrics, len(runs))
		for j, r := range runs {
			ms[j] = r.m
			if r.err != nil {
				ms[j] = worst()
			}
		}
		// The baseline runs in full only: bounds relative to it wait.
		keep := best(ms, p.header(info).constraints(nil), p.Space.Spec.Objectives)[:(len(cands)+1)/2]
		slices.Sort(keep) // by variant index again
		next := make([]Variant, len(keep))
		for j, k := range keep {
			next[j] = cands[k]
		}
		cands = next
	}
	panic("unreachable")
}

func worst() Metrics {
	inf := math.Inf(1)
	return Metrics{CostUSD: inf, P99StartupSeconds: inf, DisruptionsPerNodeDay: inf, PodsNeverRan: inf}
}

func (p *Plan) result(v Variant, m Metrics, err error) VariantResult {
	r := VariantResult{Index: v.Index, Baseline: v.Choice == nil, Choice: v.Choice, Settings: p.Settings(v), Metrics: m}
	if err != nil {
		r.Error = err.Error()
		r.Metrics = Metrics{}
	}
	return r
}

// finish runs the finalists over the other seeds and assembles the result.
func (p *Plan) finish(ctx context.Context, results []VariantResult, info SearchInfo, o Options, done *int, total int) (*Result, error) {
	res := assemble(p.header(info), results)
	var runs []run
	for _, f := range res.finalists() {
		v := variantOf(res.Variants[f])
		for s := 1; s < o.Seeds; s++ {
			runs = append(runs, run{v: v, seed: int64(s)})
		}
	}
	if err := p.runAll(ctx, runs, o, done, *done+len(runs)); err != nil {
		return nil, err
	}
	perSeed := map[int][]Metrics{}
	for _, f := range res.finalists() {
		perSeed[res.Variants[f].Index] = []Metrics{res.Variants[f].Metrics}
	}
	for _, r := range runs {
		if r.err != nil {
			return nil, fmt.Errorf("variant %d, seed %d: %w", r.v.Index, p.In.Scenario.Spec.Seed+r.seed, r.err)
		}
		perSeed[r.v.Index] = append(perSeed[r.v.Index], r.m)
	}
	res.robustness(perSeed, o.Seeds)
	return res, nil
}

// variantOf is the variant behind a result.
func variantOf(r VariantResult) Variant { return Variant{Index: r.Index, Choice: r.Choice} }

// horizon is a duration as a person writes it: 6h, 90m, 1h30m.
func horizon(d time.Duration) string { return v1.ShortDuration(d) }
