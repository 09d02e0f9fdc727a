package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsprovider "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws"
)

// awsFlags configure --cloud-provider aws, each also from upstream
// Karpenter's environment variable (see tuningEnv).
type awsFlags struct {
	clusterName, clusterEndpoint, clusterCABundle, clusterCIDR, interruptionQueue string
	// reservedCapacity is the ReservedCapacity feature gate.
	reservedCapacity bool
}

func (f *awsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.clusterName, "cluster-name", "", "aws: the EKS cluster's name (tags, node bootstrap; $CLUSTER_NAME)")
	fl.StringVar(&f.clusterEndpoint, "cluster-endpoint", "", "aws: the API server URL new nodes join (https://….eks.amazonaws.com; $CLUSTER_ENDPOINT)")
	fl.StringVar(&f.clusterCABundle, "cluster-ca-bundle", "", "aws: the cluster's CA, base64 PEM, for new nodes (default: the CA this controller trusts the API server by)")
	fl.StringVar(&f.clusterCIDR, "cluster-cidr", "", "aws: the cluster's service CIDR, for nodeadm's cluster DNS (default: the /16 (IPv4) or /108 (IPv6) of the kubernetes Service's IP, EKS's default sizes)")
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
	if f.clusterCIDR != "" {
		if _, _, err := net.ParseCIDR(f.clusterCIDR); err != nil {
			return fmt.Errorf("--cluster-cidr %q: a CIDR such as 10.100.0.0/16 (`aws eks describe-cluster --query cluster.kubernetesNetworkConfig.serviceIpv4Cidr`)", f.clusterCIDR)
		}
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
	cidr := f.clusterCIDR
	if cidr == "" {
		direct, err := client.New(cfg, client.Options{})
		if err != nil {
			return nil, err
		}
		if cidr, err = serviceCIDR(ctx, direct); err != nil {
			return nil, err
		}
		log.FromContext(ctx).Info("no --cluster-cidr: assuming the kubernetes Service's network at EKS's default size", "cidr", cidr)
	}
	return awsprovider.New(ctx, awsprovider.Options{
		Config: awsCfg, Client: c, Clock: clk,
		ClusterName: f.clusterName, ClusterEndpoint: f.clusterEndpoint, ClusterCABundle: ca, ClusterCIDR: cidr,
		KubernetesVersion: version, InterruptionQueue: f.interruptionQueue, ReservedCapacity: f.reservedCapacity,
	})
}

// serviceCIDR is the network of the default kubernetes Service's IP at
// the size EKS gives a service CIDR (a /16, or a /108 for IPv6); it reads
// the API server directly, as the manager's cache has not started.
func serviceCIDR(ctx context.Context, c client.Reader) (string, error) {
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &svc); err != nil {
		return "", fmt.Errorf("--cluster-cidr not given, and the kubernetes Service to assume it from: %w", err)
	}
	cidr, err := networkOf(svc.Spec.ClusterIP)
	if err != nil {
		return "", fmt.Errorf("--cluster-cidr not given, and the kubernetes Service to assume it from: %w", err)
	}
	return cidr, nil
}

// networkOf is the /16 (IPv4) or /108 (IPv6) network of ip.
func networkOf(ip string) (string, error) {
	parsed := net.ParseIP(ip)
	if parsed == nil {
		return "", fmt.Errorf("%q is not an IP", ip)
	}
	bits, size := 108, 128
	if v4 := parsed.To4(); v4 != nil {
		parsed, bits, size = v4, 16, 32
	}
	n := net.IPNet{IP: parsed.Mask(net.CIDRMask(bits, size)), Mask: net.CIDRMask(bits, size)}
	return n.String(), nil
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
