package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// Autoscaler is a node autoscaler under test: a process that serves
// karpenter.sh/v1 NodePools and NodeClaims against a cluster whose Nodes
// kwok fakes. A benchmark runs each one against a fresh Cluster with the
// same workload, so two implementations compare like for like.
type Autoscaler interface {
	// Name names it in results ("joiner", "karpenter").
	Name() string
	// CRDDirectories are installed into its cluster before it starts.
	CRDDirectories() []string
	// Prepare creates what its NodePools need (a node class, …).
	Prepare(ctx context.Context, c client.Client) error
	// NodePool adapts a NodePool written in AWS's well-known labels
	// (karpenter.k8s.aws/instance-category, …) to it: the node class
	// reference, and the requirements, if its instance types are labelled
	// otherwise.
	NodePool(np *v1.NodePool)
	// Start runs it against the cluster until the benchmark ends, serving
	// /metrics at the returned process's MetricsAddr.
	Start(tb testing.TB, c *Cluster) (*Process, error)
	// Price is what an instance of a NodeClaim with these labels costs an
	// hour (instance type, capacity type, zone); false when unknown.
	Price(labels map[string]string) (float64, bool)
}

// repoRoot is the repository this file is in.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Joiner is cmd/joiner's `controller --cloud-provider=kwok`, built by
// BuildJoiner.
type Joiner struct {
	// Bin is the built binary.
	Bin string
	// Args are more flags for `joiner controller`.
	Args []string
	// Env is more environment for the process (GODEBUG=memprofilerate=1,
	// say, for /debug/heapdump's allocation sites).
	Env    []string
	prices CatalogPrices
}

var _ Autoscaler = (*Joiner)(nil)

// BuildJoiner builds ./cmd/joiner (a link, with a warm build cache).
func BuildJoiner(tb testing.TB, args ...string) *Joiner {
	tb.Helper()
	bin := JoinerBinary(tb)
	prices, err := NewCatalogPrices("us-east-1")
	if err != nil {
		tb.Fatal(err)
	}
	return &Joiner{Bin: bin, Args: args, prices: prices}
}

// JoinerBinary builds ./cmd/joiner into the test's temporary directory.
func JoinerBinary(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "joiner")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/joiner")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/joiner: %v\n%s", err, out)
	}
	tb.Logf("built joiner in %s", time.Since(start).Round(100*time.Millisecond))
	return bin
}

func (j *Joiner) Name() string { return "joiner" }

func (j *Joiner) CRDDirectories() []string {
	return []string{filepath.Join(repoRoot(), "pkg", "apis", "crds")}
}

func (j *Joiner) Prepare(context.Context, client.Client) error { return nil }

// NodePool: the kwok provider's instance types are the EC2 catalog's, with
// its labels; an EC2NodeClass need not exist.
func (j *Joiner) NodePool(np *v1.NodePool) {
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
}

func (j *Joiner) Start(tb testing.TB, c *Cluster) (*Process, error) {
	tb.Helper()
	metrics, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	probe, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	return StartProcess(tb, ProcessSpec{Name: "joiner", Path: j.Bin, LogDir: c.LogDir, MetricsAddr: metrics, Env: j.Env,
		Args: append([]string{"controller", "--cloud-provider=kwok", "--kubeconfig=" + c.Kubeconfig,
			"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probe}, j.Args...)})
}

func (j *Joiner) Price(labels map[string]string) (float64, bool) { return j.prices.Price(labels) }

// CatalogPrices are the embedded EC2 catalog's prices in one region: what
// the kwok provider launches at.
type CatalogPrices map[string]cloudprovider.Offerings

// NewCatalogPrices reads the embedded catalog's offerings in region (its
// default zones), as `joiner controller --cloud-provider=kwok` does.
func NewCatalogPrices(region string) (CatalogPrices, error) {
	cat, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	types, _, err := cat.InstanceTypes(catalog.Options{Region: region})
	if err != nil {
		return nil, err
	}
	out := CatalogPrices{}
	for _, it := range types {
		out[it.Name] = it.Offerings
	}
	return out, nil
}

// Price is the offering's price for the labels' instance type, capacity
// type and zone (any zone's, when the zone is not among them).
func (p CatalogPrices) Price(labels map[string]string) (float64, bool) {
	offerings, ok := p[labels[v1.LabelInstanceType]]
	if !ok {
		return 0, false
	}
	ct := labels[v1.LabelCapacityType]
	price, found := 0.0, false
	for _, o := range offerings {
		if o.CapacityType != ct {
			continue
		}
		if o.Zone == labels[v1.LabelZone] {
			return o.Price, true
		}
		price, found = o.Price, true
	}
	return price, found
}

// External is an autoscaler built elsewhere — upstream Karpenter's kwok
// controller, as hack/karpenter.sh builds it — configured by environment
// variables (see ExternalFromEnv), which hack/scale.sh sets. It passes the
// process upstream's settings as its chart sets them.
type External struct {
	name string
	// Bin is the controller binary.
	Bin string
	// CRDs is a directory of its CRDs (karpenter.sh's and its node class's).
	CRDs string
	// Objects is a YAML file of objects to create before NodePools (its node
	// class), or "".
	Objects string
	// ClassRef is the node class NodePools refer to.
	ClassRef v1.NodeClassReference
	// Env is more environment for the process.
	Env    []string
	prices CatalogPrices
}

var _ Autoscaler = (*External)(nil)

// ExternalFromEnv is the autoscaler $<PREFIX>_BIN names, or nil when that
// is unset. $<PREFIX>_CRDS (required), $<PREFIX>_OBJECTS,
// $<PREFIX>_NODECLASS ("group/Kind/name", default
// karpenter.kwok.sh/KWOKNodeClass/default) and $<PREFIX>_ENV (space
// separated KEY=VALUE) configure it. Prices are the EC2 catalog's, so its
// instance types should be the catalog's (an instance-type file made from
// it); NodeClaims of other types count as unpriced.
func ExternalFromEnv(name, prefix string) (*External, error) {
	bin := os.Getenv(prefix + "_BIN")
	if bin == "" {
		return nil, nil
	}
	e := &External{name: name, Bin: bin, CRDs: os.Getenv(prefix + "_CRDS"), Objects: os.Getenv(prefix + "_OBJECTS"),
		ClassRef: v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
		Env:      strings.Fields(os.Getenv(prefix + "_ENV"))}
	if e.CRDs == "" {
		return nil, fmt.Errorf("$%s_BIN is set, $%s_CRDS is not: the directory of its CRDs", prefix, prefix)
	}
	if ref := os.Getenv(prefix + "_NODECLASS"); ref != "" {
		parts := strings.Split(ref, "/")
		if len(parts) != 3 {
			return nil, fmt.Errorf("$%s_NODECLASS %q: want group/Kind/name", prefix, ref)
		}
		e.ClassRef = v1.NodeClassReference{Group: parts[0], Kind: parts[1], Name: parts[2]}
	}
	prices, err := NewCatalogPrices("us-east-1")
	if err != nil {
		return nil, err
	}
	e.prices = prices
	return e, nil
}

func (e *External) Name() string             { return e.name }
func (e *External) CRDDirectories() []string { return []string{e.CRDs} }

func (e *External) Prepare(ctx context.Context, c client.Client) error {
	if e.Objects == "" {
		return nil
	}
	f, err := os.Open(e.Objects)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: %w", e.Objects, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, u); err != nil {
			return fmt.Errorf("%s: creating %s %s: %w", e.Objects, u.GetKind(), u.GetName(), err)
		}
	}
}

func (e *External) NodePool(np *v1.NodePool) {
	ref := e.ClassRef
	np.Spec.Template.Spec.NodeClassRef = &ref
}

func (e *External) Start(tb testing.TB, c *Cluster) (*Process, error) {
	tb.Helper()
	metrics, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	probe, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	port := func(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
	env := append([]string{"KUBECONFIG=" + c.Kubeconfig, "METRICS_PORT=" + port(metrics), "HEALTH_PROBE_PORT=" + port(probe),
		"DISABLE_LEADER_ELECTION=true", "SYSTEM_NAMESPACE=kube-system", "LOG_LEVEL=info"}, e.Env...)
	return StartProcess(tb, ProcessSpec{Name: e.name, Path: e.Bin, Env: env, LogDir: c.LogDir, MetricsAddr: metrics})
}

func (e *External) Price(labels map[string]string) (float64, bool) { return e.prices.Price(labels) }
