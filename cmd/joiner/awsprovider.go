package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsprovider "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws"
)

// awsFlags configure --cloud-provider aws, each also from upstream
// Karpenter's environment variable (see tuningEnv).
type awsFlags struct {
	clusterName, clusterEndpoint, clusterCABundle, interruptionQueue string
}

func (f *awsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.clusterName, "cluster-name", "", "aws: the EKS cluster's name (tags, node bootstrap; $CLUSTER_NAME)")
	fl.StringVar(&f.clusterEndpoint, "cluster-endpoint", "", "aws: the API server URL new nodes join (https://….eks.amazonaws.com; $CLUSTER_ENDPOINT)")
	fl.StringVar(&f.clusterCABundle, "cluster-ca-bundle", "", "aws: the cluster's CA, base64 PEM, for new nodes (default: the CA this controller trusts the API server by)")
	fl.StringVar(&f.interruptionQueue, "interruption-queue", "", "aws: the SQS queue (name or URL) EventBridge sends spot interruptions, rebalance recommendations, scheduled changes and instance state changes to ($INTERRUPTION_QUEUE; none: no interruption handling)")
}

// check says what --cloud-provider aws lacks before anything connects.
func (f *awsFlags) check() error {
	var missing []string
	if f.clusterName == "" {
		missing = append(missing, "--cluster-name (or $CLUSTER_NAME)")
	}
	if f.clusterEndpoint == "" {
		missing = append(missing, "--cluster-endpoint (or $CLUSTER_ENDPOINT: `aws eks describe-cluster --name NAME --query cluster.endpoint`)")
	} else if !strings.HasPrefix(f.clusterEndpoint, "https://") {
		return fmt.Errorf("--cluster-endpoint %q: the API server URL, https://…", f.clusterEndpoint)
	}
	if len(missing) > 0 {
		return fmt.Errorf("--cloud-provider aws needs %s", strings.Join(missing, " and "))
	}
	if f.clusterCABundle != "" {
		if _, err := base64.StdEncoding.DecodeString(f.clusterCABundle); err != nil {
			return fmt.Errorf("--cluster-ca-bundle: not base64 (`aws eks describe-cluster --query cluster.certificateAuthority.data` prints it): %w", err)
		}
	}
	return nil
}

// newAWSProvider builds the AWS provider: credentials and region from the
// SDK's default chain (environment, IRSA's web identity token, EKS Pod
// Identity, instance metadata; AWS_ENDPOINT_URL points it elsewhere), the
// SDK's standard retryer, the Kubernetes version from the API server.
func newAWSProvider(ctx context.Context, f *awsFlags, region string, cfg *rest.Config, c client.Client, clk clock.WithTicker) (*awsprovider.Provider, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	var loads []func(*config.LoadOptions) error
	if region != "" {
		loads = append(loads, config.WithRegion(region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("--cloud-provider aws: loading AWS credentials and region: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("--cloud-provider aws: no region: set --region or $AWS_REGION")
	}
	version, err := kubernetesVersion(cfg)
	if err != nil {
		return nil, err
	}
	ca := f.clusterCABundle
	if ca == "" && len(cfg.CAData) > 0 {
		ca = base64.StdEncoding.EncodeToString(cfg.CAData)
	}
	return awsprovider.New(ctx, awsprovider.Options{
		Config: awsCfg, Client: c, Clock: clk,
		ClusterName: f.clusterName, ClusterEndpoint: f.clusterEndpoint, ClusterCABundle: ca,
		KubernetesVersion: version, InterruptionQueue: f.interruptionQueue,
	})
}

// kubernetesVersion is the API server's major.minor ("1.37"), which AMI
// aliases resolve for.
func kubernetesVersion(cfg *rest.Config) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("asking the API server its version (AMI aliases resolve for it): %w", err)
	}
	return v.Major + "." + strings.TrimSuffix(v.Minor, "+"), nil
}
