package main

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// cloudFlags choose and configure the controller's cloud provider.
type cloudFlags struct {
	provider, catalogFile, region, scenario string
	zones                                   []string
	seed                                    int64
	apiErrorRate, spotInterruptions         float64
	aws                                     awsFlags
}

func (f *cloudFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.provider, "cloud-provider", "kwok", "where instances come from: kwok, sim, aws")
	fl.StringVar(&f.catalogFile, "catalog", "", "an instance-type catalog file (the embedded EC2 catalog's format) instead of the embedded one")
	fl.StringVar(&f.region, "region", "", "the cluster's region (default us-east-1)")
	fl.StringSliceVar(&f.zones, "zones", nil, "the cluster's zones (default: the catalog's for the region)")
	fl.StringVar(&f.scenario, "scenario", "", "sim: take the cloud from this scenario directory's scenario.yaml (seed, region, zones, catalog, faults: latencies, API error rate, never-register rate, insufficient-capacity windows from the controller's start)")
	fl.Int64Var(&f.seed, "seed", 1, "sim: the seed of the simulated cloud's boot latencies and API errors")
	fl.Float64Var(&f.apiErrorRate, "api-error-rate", 0, "sim: the share of launch calls that fail outright")
	fl.Float64Var(&f.spotInterruptions, "spot-interruptions-per-node-hour", 0, "sim: the rate of spot interruption notices per spot instance-hour (the instance is reclaimed two minutes after its notice)")
	f.aws.register(cmd)
}

// check says what is wrong with the flags before anything connects.
func (f *cloudFlags) check() error {
	switch {
	case f.provider != "kwok" && f.provider != "sim" && f.provider != "aws":
		return fmt.Errorf("--cloud-provider %q: the providers are kwok, sim and aws", f.provider)
	case f.provider != "sim" && f.scenario != "":
		return fmt.Errorf("--scenario is for --cloud-provider sim")
	case f.provider != "sim" && f.spotInterruptions != 0:
		return fmt.Errorf("--spot-interruptions-per-node-hour is for --cloud-provider sim (kwok's instances are never interrupted; aws's interruptions come from its SQS queue)")
	case f.spotInterruptions < 0:
		return fmt.Errorf("--spot-interruptions-per-node-hour %v: use a rate of 0 or more (0.05: one notice per 20 spot instance-hours)", f.spotInterruptions)
	case f.provider == "aws" && (f.catalogFile != "" || len(f.zones) > 0):
		return fmt.Errorf("--catalog and --zones are for kwok and sim: with aws, instance types and prices come from EC2 and the Pricing API (the embedded catalog when they cannot be reached), and zones from the EC2NodeClass's subnets")
	case f.provider == "aws":
		return f.aws.check()
	}
	return nil
}

// newProvider builds the provider the flags name, launching through c.
func (f *cloudFlags) newProvider(cmd *cobra.Command, cfg *rest.Config, c client.Client, clk clock.WithTickerAndDelayedExecution) (cloudprovider.CloudProvider, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	switch f.provider {
	case "aws":
		return newAWSProvider(cmd.Context(), &f.aws, f.region, cfg, c, clk)
	case "kwok":
		types, err := f.instanceTypes(f.region, f.zones, f.catalogFile)
		if err != nil {
			return nil, err
		}
		return kwok.New(c, types, clk)
	case "sim":
		opts := kwok.Options{Name: "sim", Clock: clk, Boot: &simcloud.BootModel{}}
		region, zones, catalogFile, seed := f.region, f.zones, f.catalogFile, f.seed
		apiErrorRate, spotInterruptions := f.apiErrorRate, f.spotInterruptions
		if f.scenario != "" {
			abs, err := filepath.Abs(f.scenario)
			if err != nil {
				return nil, err
			}
			in, err := scenario.Load(os.DirFS(abs), ".", f.scenario)
			if err != nil {
				return nil, fmt.Errorf("--scenario: %w", err)
			}
			s := in.Scenario.Spec
			if n := len(s.CapacityReservations); n > 0 {
				// Named, not dropped in silence: the controller's simulated
				// cloud launches on-demand and spot only.
				ctrllog.FromContext(cmd.Context()).Info("the scenario's capacity reservations are not modelled by --cloud-provider sim: its nodes launch on-demand and spot (joiner simulate models them)", "reservations", n)
			}
			if r := s.Faults.NodeFailuresPerNodeHour; r > 0 {
				// A failed kubelet is kwok's to fake, not the cloud's.
				ctrllog.FromContext(cmd.Context()).Info("the scenario's node failures are not modelled by --cloud-provider sim: its Nodes stay Ready (joiner simulate models them)", "nodeFailuresPerNodeHour", r)
			}
			boot, windows := s.Faults.Boot(), s.Faults.CapacityWindows()
			opts.Boot, opts.Capacity = &boot, windows
			changed := cmd.Flags().Changed
			if !changed("region") {
				region = s.Region
			}
			if !changed("zones") {
				zones = s.Zones
			}
			if !changed("catalog") && s.Catalog != "" {
				catalogFile = filepath.Join(abs, s.Catalog)
			}
			if !changed("seed") {
				seed = s.Seed
			}
			if !changed("api-error-rate") {
				apiErrorRate = s.Faults.APIErrorRate
			}
			if !changed("spot-interruptions-per-node-hour") {
				spotInterruptions = s.Faults.SpotInterruptionsPerNodeHour
			}
		}
		if apiErrorRate < 0 || apiErrorRate > 1 {
			return nil, fmt.Errorf("--api-error-rate %v: use a share from 0 to 1", apiErrorRate)
		}
		types, err := f.instanceTypes(region, zones, catalogFile)
		if err != nil {
			return nil, err
		}
		opts.Rand, opts.APIErrorRate, opts.SpotInterruptionsPerNodeHour = rand.New(rand.NewSource(seed)), apiErrorRate, spotInterruptions
		return kwok.NewWithOptions(c, types, opts)
	}
	return nil, f.check()
}

func (f *cloudFlags) instanceTypes(region string, zones []string, catalogFile string) ([]*cloudprovider.InstanceType, error) {
	cat, err := loadCatalog(catalogFile)
	if err != nil {
		return nil, err
	}
	types, _, err := cat.InstanceTypes(catalog.Options{Region: region, Zones: zones})
	if err != nil {
		return nil, fmt.Errorf("--region/--zones: %w", err)
	}
	return types, nil
}
