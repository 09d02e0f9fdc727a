// Package aws is the AWS cloud provider: it launches EC2 instances for
// NodeClaims from the EC2NodeClass their NodePool references, as upstream
// Karpenter's AWS provider does, on the AWS SDK for Go v2 (so the code the
// tests run against an in-process fake endpoint is the code that calls
// AWS). Discovery (nodeclass.go, amis.go, instanceprofile.go) resolves a
// NodeClass's selectors; a launch (fleet.go) makes launch templates
// (launchtemplate.go, userdata.go) and one CreateFleet; insufficient
// capacity is remembered for three minutes (offerings.go); instances are
// read back by DescribeInstances (instances.go); drift.go and
// interruption.go answer the controller's drift and interruption loops.
package aws

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
)

// ProviderIDPrefix begins every provider ID: aws:///<zone>/<instance-id>.
const ProviderIDPrefix = "aws:///"

// Options configure a Provider.
type Options struct {
	// Config is the SDK configuration: from config.LoadDefaultConfig (the
	// SDK's default credential chain, so IRSA and EKS Pod Identity work),
	// or a fake endpoint's. Its retryer retries throttled calls.
	Config aws.Config
	// PricingConfig is the Pricing API's configuration; nil is Config in
	// us-east-1 (where the Pricing API is).
	PricingConfig *aws.Config
	// Client reads EC2NodeClasses and NodePools.
	Client client.Client
	// ClusterName, ClusterEndpoint and ClusterCABundle (base64 PEM) are
	// what nodes join; ClusterCIDR, the service CIDR, is passed to nodeadm
	// when set.
	ClusterName, ClusterEndpoint, ClusterCABundle, ClusterCIDR string
	// KubernetesVersion such as "1.37" picks the AMIs aliases resolve to.
	KubernetesVersion string
	// InterruptionQueue is an SQS queue name or URL; "" handles no
	// interruption notices.
	InterruptionQueue string
	// Clock times the caches. Required.
	Clock clock.WithTicker
	// ReservedCapacity is upstream's feature gate of that name (on by
	// default since v1.6): the EC2NodeClasses' capacity reservations are
	// resolved and offered, launched into with targeted launch templates,
	// and other launches opt out of open reservations.
	ReservedCapacity bool
}

// Provider is the AWS cloud provider. It is safe for concurrent use.
type Provider struct {
	opts        Options
	ec2         *ec2.Client
	iam         *iam.Client
	ssm         *ssm.Client
	types       instanceTypeSource
	queue       messageQueue // nil without an interruption queue
	unavailable *unavailableOfferings
	// refreshes counts the instance-type and price refreshes that
	// succeeded, for Version.
	refreshes atomic.Int64
	describer *batcher[*ec2types.Instance]
	// terminator batches TerminateInstances; each ID's error is its own.
	terminator *batcher[error]

	interruptions chan cloudprovider.Interruption
	// expiring are the instances already announced as in an expiring
	// Capacity Block.
	expiring map[string]bool
	// overlaid is what the NodeOverlays did, set by the controller.
	overlaid atomic.Pointer[overlay.Result]

	// reservationsChanged counts changes of reservationFree, for Version.
	reservationsChanged atomic.Int64

	mu       sync.Mutex
	resolved map[string]*resolvedClass // by NodeClass name
	// reservationFree: each capacity reservation's free instances, from
	// the last DescribeCapacityReservations and the launches and
	// terminations since.
	reservationFree map[string]int
	templates       map[string]bool // launch template names known to exist
	typeInfo        map[string]*cloudprovider.InstanceType
}

var (
	_ cloudprovider.CloudProvider = (*Provider)(nil)
	_ cloudprovider.Interrupter   = (*Provider)(nil)
)

// resolveTTL is how long a NodeClass's resolution is used before its
// selectors are looked up again (upstream caches subnets, security groups
// and images for about a minute too).
const resolveTTL = time.Minute

// resolvedClass is a NodeClass as last resolved.
type resolvedClass struct {
	nodeClass *awsv1.EC2NodeClass
	status    awsv1.EC2NodeClassStatus
	err       error
	at        time.Time
}

// New returns a provider over opts.Config's account and region.
func New(ctx context.Context, opts Options) (*Provider, error) {
	switch {
	case opts.Clock == nil:
		return nil, errors.New("aws provider: Options.Clock is required")
	case opts.Client == nil:
		return nil, errors.New("aws provider: Options.Client is required")
	case opts.ClusterName == "":
		return nil, errors.New("aws provider: the cluster name is required (--cluster-name)")
	case opts.KubernetesVersion == "":
		return nil, errors.New("aws provider: the cluster's Kubernetes version is required, for the AMI aliases")
	case opts.Config.Region == "":
		return nil, errors.New("aws provider: no AWS region configured (set AWS_REGION)")
	}
	pricingCfg := opts.Config.Copy()
	pricingCfg.Region = "us-east-1"
	if opts.PricingConfig != nil {
		pricingCfg = *opts.PricingConfig
	}
	ec2c := ec2.NewFromConfig(opts.Config)
	p := &Provider{
		opts:            opts,
		ec2:             ec2c,
		iam:             iam.NewFromConfig(opts.Config),
		ssm:             ssm.NewFromConfig(opts.Config),
		types:           newInstanceTypes(ec2c, pricingCfg, opts),
		unavailable:     newUnavailableOfferings(opts.Clock),
		interruptions:   make(chan cloudprovider.Interruption, 64),
		resolved:        map[string]*resolvedClass{},
		templates:       map[string]bool{},
		typeInfo:        map[string]*cloudprovider.InstanceType{},
		reservationFree: map[string]int{},
		expiring:        map[string]bool{},
	}
	p.describer = newDescriber(p.describeInstances)
	p.terminator = newBatcher(p.terminateInstances)
	if opts.InterruptionQueue != "" {
		p.queue = newQueue(opts.Config, opts.InterruptionQueue)
	}
	return p, nil
}

// Name identifies the provider.
func (p *Provider) Name() string { return "aws" }

// Interruptions are the notices read from the interruption queue.
func (p *Provider) Interruptions() <-chan cloudprovider.Interruption { return p.interruptions }

// RepairPolicies are upstream's (see cloudprovider.AWSRepairPolicies).
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.AWSRepairPolicies()
}

// refreshEvery is how often instance types and prices are read again.
const refreshEvery = 12 * time.Hour

// Run refreshes the instance types and prices, and polls the interruption
// queue, until ctx ends.
func (p *Provider) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if p.queue != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.pollInterruptions(ctx)
		}()
	}
	t := p.opts.Clock.NewTicker(refreshEvery)
	defer t.Stop()
	blocks := p.opts.Clock.NewTicker(blockCheckEvery)
	defer blocks.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-blocks.C():
			p.expireCapacityBlocks(ctx)
		case <-t.C():
			if err := p.types.Refresh(ctx); err != nil {
				logError(ctx, err, "refreshing instance types and prices")
			}
			p.refreshes.Add(1) // even a partial refresh may have changed prices
		}
	}
}

// Version changes whenever what GetInstanceTypes answers may have: an
// offering marked unavailable or back, prices refreshed. The controller
// asks for its NodePools' instance types again then, so its plans leave
// out what EC2 just had no capacity for.
func (p *Provider) Version() int {
	return p.unavailable.Version() + int(p.refreshes.Load()) + int(p.reservationsChanged.Load())
}

// nodeClass reads an EC2NodeClass and resolves it (or uses its resolution
// of the last minute). An error is a NodeClassNotReadyError when the
// NodeClass does not exist or does not resolve.
func (p *Provider) nodeClass(ctx context.Context, ref *v1.NodeClassReference) (*resolvedClass, error) {
	if ref == nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(errors.New("no nodeClassRef"))
	}
	if ref.Kind != "" && ref.Kind != "EC2NodeClass" {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeClassRef %s/%s: the aws provider takes only EC2NodeClass", ref.Kind, ref.Name))
	}
	nc := &awsv1.EC2NodeClass{}
	if err := p.opts.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, nc); err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("reading EC2NodeClass %s: %w", ref.Name, err))
	}
	p.mu.Lock()
	r := p.resolved[nc.Name]
	p.mu.Unlock()
	if r == nil || r.nodeClass.Generation != nc.Generation || r.nodeClass.UID != nc.UID || p.opts.Clock.Since(r.at) >= resolveTTL {
		r = p.resolve(ctx, nc)
	}
	if r.err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %s: %w", nc.Name, r.err))
	}
	return r, nil
}

func logError(ctx context.Context, err error, what string) {
	log.FromContext(ctx).Error(err, what)
}
