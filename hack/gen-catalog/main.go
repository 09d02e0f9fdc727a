// Command gen-catalog regenerates the instance-type catalog
// (pkg/cloudprovider/catalog/aws-instance-types.json's format) from a
// region's APIs, through the AWS provider's own instance-type code
// (pkg/cloudprovider/aws/instancetype): DescribeInstanceTypes,
// DescribeInstanceTypeOfferings, DescribeSpotPriceHistory and the Pricing
// API's GetProducts. For a user with AWS credentials (the SDK's default
// chain: environment, profile, SSO, IRSA, Pod Identity):
//
//	go run ./hack/gen-catalog --region us-east-1 [--out FILE]
//
// The spot prices it writes are real (DescribeSpotPriceHistory's newest per
// type and zone; metadata.spotNote says so), unlike the embedded file's
// synthetic ones. Types the embedded catalog has keep its allocatable and
// the facts the API lacks (branch ENIs, trunking); others get upstream
// Karpenter's AL2023 allocatable. The IAM actions it needs:
// ec2:DescribeInstanceTypes, ec2:DescribeInstanceTypeOfferings,
// ec2:DescribeSpotPriceHistory, pricing:GetProducts.
//
// --endpoint is for tests: one URL for every service (a fake AWS).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/instancetype"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gen-catalog:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gen-catalog", flag.ContinueOnError)
	region := fs.String("region", "", "AWS region whose instance types and prices are fetched (required), e.g. us-east-1")
	out := fs.String("out", "pkg/cloudprovider/catalog/aws-instance-types.json", "file to write")
	pricingRegion := fs.String("pricing-region", "us-east-1", "region of the Pricing API endpoint (us-east-1 or ap-south-1)")
	endpoint := fs.String("endpoint", "", "for tests only: one endpoint URL for every service (a fake AWS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *region == "" || fs.NArg() > 0 {
		return errors.New("usage: go run ./hack/gen-catalog --region REGION [--out FILE]")
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(*region))
	if err != nil {
		return fmt.Errorf("loading AWS configuration: %w", err)
	}
	if *endpoint != "" {
		cfg.BaseEndpoint = aws.String(*endpoint)
	}
	ec2Client := ec2.NewFromConfig(cfg)
	pricingClient := pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = *pricingRegion })

	p := instancetype.New(ec2Client, pricingClient, instancetype.Options{Region: *region})
	if err := p.Refresh(ctx); err != nil {
		return fmt.Errorf("fetching %s's instance types and prices: %w", *region, err)
	}
	c, err := p.Catalog()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	// What is written must load as a catalog, or it is not written.
	if _, err := catalog.Parse(b, *out); err != nil {
		return fmt.Errorf("the generated catalog does not parse: %w", err)
	}
	if err := writeFile(*out, b); err != nil {
		return err
	}
	spot := 0
	for _, e := range c.Entries {
		spot += len(e.SpotPriceSynthetic)
	}
	fmt.Fprintf(stdout, "%s: %d instance types of %s, %d with an on-demand price, %d spot prices (type × zone); %d skipped\n",
		*out, c.Metadata.Count, *region, c.Metadata.CountWithOnDemandPrice, spot, len(c.Metadata.TypesWithoutSpecsSkipped))
	fmt.Fprintln(stdout, "source:", p.Source())
	return nil
}

// writeFile replaces path whole (a temporary file renamed over it).
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gen-catalog-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
