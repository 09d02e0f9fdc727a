//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

const productionDir = "../../examples/clusters/production"

// driftJSON is what `joiner drift -o json` says, by kind/name and field.
type driftJSON struct {
	Missing []struct{ Kind, Name string } `json:"missing"`
	Extra   []struct{ Kind, Name string } `json:"extra"`
	Changed []struct {
		Kind, Name, Field string
		A, B              any
	} `json:"changed"`
}

func (d driftJSON) String() string {
	var parts []string
	for _, r := range d.Missing {
		parts = append(parts, "missing "+r.Kind+"/"+r.Name)
	}
	for _, r := range d.Extra {
		parts = append(parts, "extra "+r.Kind+"/"+r.Name)
	}
	for _, c := range d.Changed {
		parts = append(parts, fmt.Sprintf("changed %s/%s %s %v→%v", c.Kind, c.Name, c.Field, c.A, c.B))
	}
	return strings.Join(parts, "; ")
}

// TestDrift applies examples/clusters/production to a real API server,
// checks that `joiner drift` finds it in sync (the server's defaults, status
// and metadata are not drift), then changes one field and deletes one
// object and checks the exact drift, the exit status and, with --watch,
// joiner_config_drift on /metrics — back to 0 once the cluster is repaired.
func TestDrift(t *testing.T) {
	ctx := context.Background()
	bin := buildJoiner(t)
	kubeconfig := writeKubeconfig(t)

	// Objects other tests left under the names Git uses (the kwok tests'
	// NodePool general, the AWS tests' EC2NodeClass default, whose
	// finalizer no controller removes now) go first; what else they left
	// is the cluster's, not Git's: extra.
	clearNames(t, filepath.Join(productionDir, "karpenter"))
	var before []string
	for _, kind := range []string{"NodePoolList", "EC2NodeClassList"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(map[string]string{"NodePoolList": "karpenter.sh/v1", "EC2NodeClassList": "karpenter.k8s.aws/v1"}[kind])
		list.SetKind(kind)
		if err := k8s.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			before = append(before, "extra "+it.GetKind()+"/"+it.GetName())
		}
	}

	objs := applyDir(t, filepath.Join(productionDir, "karpenter"))
	if len(objs) != 4 {
		t.Fatalf("applied %d objects, want the 3 NodePools and the EC2NodeClass", len(objs))
	}

	want := strings.Join(before, "; ")
	if got, code := runDrift(t, bin, kubeconfig); got.String() != want || code != exitFor(want) {
		t.Fatalf("freshly applied: drift %q (exit %d), want %q", got, code, want)
	}

	// One field changed by hand, one object deleted.
	general := objs["NodePool/general"]
	if err := k8s.Patch(ctx, general, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"limits":{"cpu":"2000"}}}`))); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, objs["NodePool/gpu"]); err != nil {
		t.Fatal(err)
	}
	want = strings.Join(append([]string{"missing NodePool/gpu"}, append(before, "changed NodePool/general spec.limits.cpu 1000→2000")...), "; ")
	got, code := runDrift(t, bin, kubeconfig)
	if got.String() != want || code != 1 {
		t.Fatalf("after the edit: drift %q (exit %d), want %q (exit 1)", got, code, want)
	}
	text, _ := exec.Command(bin, "drift", productionDir, "--kubeconfig", kubeconfig).Output()
	for _, row := range []string{"missing NodePool gpu ../../examples/clusters/production/karpenter/nodepools.yaml:70 -",
		`changed NodePool general spec.limits.cpu "1000" "2000"`, fmt.Sprintf("1 missing, %d extra, 1 field changed, 2 in sync", len(before))} {
		found := false
		for _, line := range strings.Split(string(text), "\n") {
			found = found || strings.Join(strings.Fields(line), " ") == row
		}
		if !found {
			t.Errorf("text output lacks the row %q:\n%s", row, text)
		}
	}

	// --watch: the gauge says which resources drifted, and follows the repair.
	addr := freeLoopbackAddr(t)
	wctx, cancel := context.WithCancel(ctx)
	watch := exec.CommandContext(wctx, bin, "drift", productionDir, "--kubeconfig", kubeconfig, "--watch", "--interval", "500ms", "--metrics-bind-address", addr)
	var watchOut bytes.Buffer
	watch.Stdout, watch.Stderr = &watchOut, &watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = watch.Wait()
		if t.Failed() {
			t.Logf("drift --watch output:\n%s", tail(watchOut.String(), 3000))
		}
	}()
	waitGauge(t, addr, "EC2NodeClass/default=0 NodePool/general=1 NodePool/gpu=1 NodePool/spot=0", before)

	if err := k8s.Patch(ctx, general, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"limits":{"cpu":"1000"}}}`))); err != nil {
		t.Fatal(err)
	}
	applyDocs(t, filepath.Join(productionDir, "karpenter"), "NodePool/gpu")
	waitGauge(t, addr, "EC2NodeClass/default=0 NodePool/general=0 NodePool/gpu=0 NodePool/spot=0", before)
}

func exitFor(drift string) int {
	if drift == "" {
		return 0
	}
	return 1
}

// runDrift runs `joiner drift -o json` over the production manifests.
func runDrift(t *testing.T, bin, kubeconfig string) (driftJSON, int) {
	t.Helper()
	cmd := exec.Command(bin, "drift", productionDir, "--kubeconfig", kubeconfig, "-o", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var d driftJSON
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("drift -o json (exit %d): %v\n%s%s", code, err, out, stderr.String())
	}
	// Extra resources (other tests') in a stable order after missing.
	sort.SliceStable(d.Extra, func(i, j int) bool { return d.Extra[i].Kind+d.Extra[i].Name < d.Extra[j].Kind+d.Extra[j].Name })
	return d, code
}

// applyDir creates the Karpenter objects of dir's manifests, deleted when
// the test ends, by kind/name.
func applyDir(t *testing.T, dir string) map[string]*unstructured.Unstructured {
	t.Helper()
	objs := applyDocs(t, dir, "")
	t.Cleanup(func() {
		for _, o := range objs {
			if err := k8s.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", o.GetName(), err)
			}
		}
	})
	return objs
}

// clearNames deletes the cluster's objects named as dir's Karpenter objects
// are, finalizers and all, and waits for them to go.
func clearNames(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	files, err := manifest.ManifestFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		docs, err := manifest.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			if !manifest.IsKarpenter(d) {
				continue
			}
			o := &unstructured.Unstructured{}
			o.SetAPIVersion(d.APIVersion)
			o.SetKind(d.Kind)
			if err := k8s.Get(ctx, client.ObjectKey{Name: d.Name}, o); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			if len(o.GetFinalizers()) > 0 {
				if err := k8s.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
					t.Fatal(err)
				}
			}
			if err := k8s.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			eventually(t, d.Kind+"/"+d.Name+" gone", func(ctx context.Context) (bool, error) {
				err := k8s.Get(ctx, client.ObjectKey{Name: d.Name}, o)
				return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			})
		}
	}
}

// applyDocs creates the Karpenter objects of dir (only the one named by
// only, if set), as written: the server applies the defaults.
func applyDocs(t *testing.T, dir, only string) map[string]*unstructured.Unstructured {
	t.Helper()
	files, err := manifest.ManifestFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		docs, err := manifest.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			key := d.Kind + "/" + d.Name
			if !manifest.IsKarpenter(d) || (only != "" && key != only) {
				continue
			}
			u := &unstructured.Unstructured{Object: d.Object}
			if err := k8s.Create(context.Background(), u); err != nil {
				t.Fatalf("creating %s from %s: %v", key, f, err)
			}
			objs[key] = u
		}
	}
	return objs
}

// waitGauge scrapes addr until joiner_config_drift reads want (series as
// kind/name=value), plus 1 for each extra resource, for 30 s.
func waitGauge(t *testing.T, addr, want string, extra []string) {
	t.Helper()
	series := strings.Fields(want)
	for _, e := range extra {
		series = append(series, strings.TrimPrefix(e, "extra ")+"=1")
	}
	sort.Strings(series)
	want = strings.Join(series, " ")
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got = driftGauge(addr)
		if got == want {
			return
		}
	}
	t.Fatalf("joiner_config_drift: %q, want %q", got, want)
}

func driftGauge(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return err.Error()
	}
	var series []string
	for _, m := range families["joiner_config_drift"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		series = append(series, fmt.Sprintf("%s/%s=%g", l["kind"], l["name"], m.GetGauge().GetValue()))
	}
	sort.Strings(series)
	return strings.Join(series, " ")
}
