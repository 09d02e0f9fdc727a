package aws

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// env is a provider over the fake's Standard account for the cluster
// "production" on Kubernetes 1.37, reading its EC2NodeClasses from a
// controller-runtime fake client.
type env struct {
	t     *testing.T
	ctx   context.Context
	aws   *fake.AWS
	clock *clocktesting.FakeClock
	kube  client.Client
	p     *Provider
}

const (
	testEndpoint = "https://api.production.example"
	testCA       = "Q0EgUEVN"
	testCIDR     = "10.100.0.0/16"
)

// newEnv takes its instance types from the embedded catalog, the same the
// fake's EC2 and Pricing APIs serve (instancetype's tests hold them to
// that), without fetching them for every test.
func newEnv(t *testing.T, classes ...*awsv1.EC2NodeClass) *env {
	return newEnvWith(t, envOptions{}, classes...)
}

type envOptions struct {
	// queue is the interruption queue.
	queue string
	// liveTypes: instance types and prices from the fake's APIs, through
	// instancetype.Provider, as New makes them.
	liveTypes bool
	// reservedCapacity turns the ReservedCapacity gate on.
	reservedCapacity bool
}

func newEnvWith(t *testing.T, o envOptions, classes ...*awsv1.EC2NodeClass) *env {
	t.Helper()
	f := fake.Standard(fake.StandardOptions{Cluster: "production", KubernetesVersion: "1.37"})
	t.Cleanup(f.Close)
	scheme := runtime.NewScheme()
	if err := awsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fakeclient.NewClientBuilder().WithScheme(scheme)
	for _, nc := range classes {
		b = b.WithObjects(nc)
	}
	e := &env{t: t, ctx: context.Background(), aws: f, kube: b.Build(),
		clock: clocktesting.NewFakeClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))}
	p, err := New(e.ctx, Options{Config: f.Config(), Client: e.kube, ClusterName: "production", ClusterEndpoint: testEndpoint,
		ClusterCABundle: testCA, ClusterCIDR: testCIDR, KubernetesVersion: "1.37", InterruptionQueue: o.queue, Clock: e.clock,
		ReservedCapacity: o.reservedCapacity})
	if err != nil {
		t.Fatal(err)
	}
	if !o.liveTypes {
		p.types = catalogTypes{region: f.Region()}
	}
	e.p = p
	return e
}

// catalogTypes are the embedded catalog's instance types.
type catalogTypes struct{ region string }

func (catalogTypes) Refresh(context.Context) error { return nil }

// embeddedCatalog is parsed once for the package's tests.
var embeddedCatalog = sync.OnceValues(catalog.Default)

func (c catalogTypes) List(_ context.Context, zones []string) ([]*cloudprovider.InstanceType, error) {
	cat, err := embeddedCatalog()
	if err != nil {
		return nil, err
	}
	its, _, err := cat.InstanceTypes(catalog.Options{Region: c.region, Zones: zones})
	return its, err
}

// seedNodeClass is the seeds' production EC2NodeClass, as the file has it.
func seedNodeClass(t *testing.T) *awsv1.EC2NodeClass {
	t.Helper()
	raw, err := os.ReadFile("../../../examples/clusters/production/karpenter/ec2nodeclass.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := yaml.UnmarshalStrict(raw, nc); err != nil {
		t.Fatal(err)
	}
	nc.UID = "uid-default"
	return nc
}

// nodeClassWith is the seed's NodeClass, changed.
func nodeClassWith(t *testing.T, change func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := seedNodeClass(t)
	change(nc)
	return nc
}

// claim is a NodeClaim of NodePool "general" for the NodeClass, with
// requirements given as key, operator, values….
func claim(name, nodeClass string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "general", "team": "platform"}},
		Spec: v1.NodeClaimSpec{
			Requirements: reqs,
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClass},
			Taints:       []corev1.Taint{{Key: "dedicated", Value: "general", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func nodePool(nodeClass string) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClass}
	return np
}

// calls counts the provider's invocations of an action (the SDK's retries
// folded in).
func (e *env) calls(action string) int {
	n := 0
	for _, c := range e.aws.Invocations() {
		if c.Action == action {
			n++
		}
	}
	return n
}

// update changes a NodeClass in the API server and lets the provider's
// resolution of it expire.
func (e *env) update(name string, change func(*awsv1.EC2NodeClass)) {
	e.t.Helper()
	nc := &awsv1.EC2NodeClass{}
	if err := e.kube.Get(e.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		e.t.Fatal(err)
	}
	change(nc)
	if err := e.kube.Update(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Step(resolveTTL)
}
