package lint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// liveKinds are the lists Drift reads from a cluster.
var liveKinds = []schema.GroupVersionKind{
	v1.SchemeGroupVersion.WithKind("NodePoolList"),
	awsv1.SchemeGroupVersion.WithKind("EC2NodeClassList"),
	v1alpha1.SchemeGroupVersion.WithKind("NodeOverlayList"),
}

// LiveResources lists the cluster's NodePools, EC2NodeClasses and
// NodeOverlays, with the CRD defaults applied as for Git (the API server
// applied them already; doing it again changes nothing). A kind whose CRD the cluster lacks has
// no objects.
func (l *Linter) LiveResources(ctx context.Context, r client.Reader) ([]Resource, error) {
	var out []Resource
	for _, gvk := range liveKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := r.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("listing %ss: %w", strings.TrimSuffix(gvk.Kind, "List"), err)
		}
		for _, item := range list.Items {
			res, err := l.liveResource(item.Object)
			if err != nil {
				return nil, err
			}
			out = append(out, res)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

func (l *Linter) liveResource(obj map[string]any) (Resource, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return Resource{}, err
	}
	docs, err := manifest.Parse("live", b)
	if err != nil || len(docs) != 1 {
		return Resource{}, fmt.Errorf("reading a live object: %v", err)
	}
	d := docs[0]
	_ = l.v.Validate(d) // applies the defaults; the server accepted it already
	return Resource{Kind: d.Kind, Name: d.Name, Object: comparable(d.Object)}, nil
}

// DriftReport is the live cluster against Git. In Changed, A is Git's
// value and B the cluster's.
type DriftReport struct {
	Missing []Resource  `json:"missing"`
	Extra   []Resource  `json:"extra"`
	Changed []FieldDiff `json:"changed"`
	// InSync are the Git resources the cluster has unchanged.
	InSync []Resource `json:"inSync"`
}

// Drifted reports whether the cluster differs from Git.
func (r *DriftReport) Drifted() bool { return len(r.Missing)+len(r.Extra)+len(r.Changed) > 0 }

// Drift compares the cluster with Git: resources Git has and the cluster
// lacks, resources the cluster has and Git lacks, and, for the rest, the
// fields Git sets (after the CRD defaults) that the cluster holds
// differently. Fields only the cluster sets — status, server metadata,
// what another controller adds — are not drift.
func Drift(git, live []Resource) *DriftReport {
	r := &DriftReport{Missing: []Resource{}, Extra: []Resource{}, Changed: []FieldDiff{}, InSync: []Resource{}}
	byKey := map[string]Resource{}
	for _, l := range live {
		byKey[l.key()] = l
	}
	inGit := map[string]bool{}
	for _, g := range git {
		inGit[g.key()] = true
		l, ok := byKey[g.key()]
		if !ok {
			r.Missing = append(r.Missing, g)
			continue
		}
		n := len(r.Changed)
		diffGitSet("", g.Object, l.Object, func(path string, a, b any) {
			r.Changed = append(r.Changed, FieldDiff{Kind: g.Kind, Name: g.Name, Field: path, A: a, B: b})
		})
		if len(r.Changed) == n {
			r.InSync = append(r.InSync, g)
		}
	}
	for _, l := range live {
		if !inGit[l.key()] {
			r.Extra = append(r.Extra, Resource{Kind: l.Kind, Name: l.Name})
		}
	}
	for _, rs := range [][]Resource{r.Missing, r.Extra, r.InSync} {
		sort.Slice(rs, func(i, j int) bool { return rs[i].key() < rs[j].key() })
	}
	return r
}

// diffGitSet compares the fields git sets: a mapping by its keys in git
// only, a list as a whole (git sets all of it), a scalar by value.
func diffGitSet(path string, git, live any, report func(string, any, any)) {
	gm, ok := git.(map[string]any)
	if !ok {
		diffValues(path, git, live, report)
		return
	}
	lm, ok := live.(map[string]any)
	if !ok {
		report(path, git, live)
		return
	}
	keys := map[string]bool{}
	for k := range gm {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		p := k
		if path != "" {
			p = path + "." + k
		}
		if !reflect.DeepEqual(gm[k], lm[k]) {
			diffGitSet(p, gm[k], lm[k], report)
		}
	}
}

// DriftGauge is joiner_config_drift{kind,name}: 1 for a resource that
// drifted (missing, extra or changed), 0 for one in sync.
func DriftGauge(reg prometheus.Registerer) (*prometheus.GaugeVec, error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "joiner_config_drift",
		Help: "1 if the NodePool, NodeClass or NodeOverlay in the cluster differs from Git (missing, extra or changed fields), 0 if in sync.",
	}, []string{"kind", "name"})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	return g, nil
}

// Observe sets the gauge to the report: every resource it names, and none
// other (a resource gone from both sides disappears).
func (r *DriftReport) Observe(g *prometheus.GaugeVec) {
	g.Reset()
	for _, res := range r.InSync {
		g.WithLabelValues(res.Kind, res.Name).Set(0)
	}
	for _, res := range append(append([]Resource{}, r.Missing...), r.Extra...) {
		g.WithLabelValues(res.Kind, res.Name).Set(1)
	}
	for _, f := range r.Changed {
		g.WithLabelValues(f.Kind, f.Name).Set(1)
	}
}

// WatchDrift compares dir with the cluster every interval until ctx ends,
// setting the gauge and calling report after each comparison (err set
// when one could not be made; the gauge then keeps its last values).
func (l *Linter) WatchDrift(ctx context.Context, dir string, r client.Reader, interval time.Duration, g *prometheus.GaugeVec, report func(*DriftReport, error)) {
	for {
		rep, err := l.DriftOnce(ctx, dir, r)
		if err == nil {
			rep.Observe(g)
		}
		report(rep, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// DriftOnce reads Git (dir) and the cluster and compares them.
func (l *Linter) DriftOnce(ctx context.Context, dir string, r client.Reader) (*DriftReport, error) {
	git, err := l.LoadResources(dir)
	if err != nil {
		return nil, err
	}
	live, err := l.LiveResources(ctx, r)
	if err != nil {
		return nil, err
	}
	return Drift(git, live), nil
}

// WriteDriftText writes a drift report as a table and a summary line.
func WriteDriftText(w io.Writer, r *DriftReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.Drifted() {
		fmt.Fprintf(tw, "DRIFT\tKIND\tNAME\tFIELD\tGIT\tCLUSTER\n")
	}
	for _, res := range r.Missing {
		fmt.Fprintf(tw, "missing\t%s\t%s\t\t%s:%d\t-\n", res.Kind, res.Name, res.File, res.Line)
	}
	for _, res := range r.Extra {
		fmt.Fprintf(tw, "extra\t%s\t%s\t\t-\tpresent\n", res.Kind, res.Name)
	}
	for _, f := range r.Changed {
		fmt.Fprintf(tw, "changed\t%s\t%s\t%s\t%s\t%s\n", f.Kind, f.Name, f.Field, Value(f.A), Value(f.B))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d missing, %d extra, %s changed, %d in sync\n",
		len(r.Missing), len(r.Extra), plural(len(r.Changed), "field"), len(r.InSync))
	return err
}

// WriteDriftJSON writes a drift report as one JSON object.
func WriteDriftJSON(w io.Writer, r *DriftReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
