package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// TestAgainstFake: gen-catalog run against the fake (the embedded catalog
// seeded in three zones) writes a file catalog.Parse accepts whose entries
// are the seeded ones, facts and prices.
func TestAgainstFake(t *testing.T) {
	f := fake.Standard(fake.StandardOptions{Region: "us-east-1", Cluster: "production", KubernetesVersion: "1.37"})
	defer f.Close()
	// The SDK's default chain, fed by the environment only.
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFAKE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	out := filepath.Join(dir, "aws-instance-types.json")
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"--region", "us-east-1", "--endpoint", f.URL(), "--out", out}, &stdout); err != nil {
		t.Fatal(err)
	}
	t.Log(stdout.String())
	got, err := catalog.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seeded, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]catalog.Entry{}
	for _, e := range seeded.Entries {
		if e.OnDemandPrice != nil { // the fake offers the priced ones
			want[e.Name] = e
		}
	}
	if len(got.Entries) != len(want) {
		t.Errorf("%d entries, want the %d seeded with a price", len(got.Entries), len(want))
	}
	for _, g := range got.Entries {
		w, ok := want[g.Name]
		if !ok {
			t.Errorf("%s was not seeded", g.Name)
			continue
		}
		if g.SpecSource != "DescribeInstanceTypes" {
			t.Errorf("%s: specSource %q", g.Name, g.SpecSource)
		}
		w.SpecSource = g.SpecSource
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", g.Name, g, w)
		}
	}
	// Loaded as a catalog, the file gives the instance types the embedded
	// one does (the same spot prices: the fake serves the synthetic ones).
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	fromFile, _, err := got.InstanceTypes(catalog.Options{Region: "us-east-1", Zones: zones})
	if err != nil {
		t.Fatal(err)
	}
	embedded, _, err := seeded.InstanceTypes(catalog.Options{Region: "us-east-1", Zones: zones})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, it := range embedded {
		byName[it.Name] = fmt.Sprint(it.Requirements.String(), it.Capacity, it.Overhead, offerings(it))
	}
	for _, it := range fromFile {
		if g := fmt.Sprint(it.Requirements.String(), it.Capacity, it.Overhead, offerings(it)); g != byName[it.Name] {
			t.Errorf("%s from the file:\n%s\nembedded:\n%s", it.Name, g, byName[it.Name])
		}
	}
	m := got.Metadata
	if m.OnDemandRegion != "us-east-1" || m.Count != len(want) || m.CountWithOnDemandPrice != len(want) ||
		!strings.Contains(m.SpotNote, "REAL spot prices") || m.Source == nil || m.Source.Region != "us-east-1" {
		t.Errorf("metadata %+v", m)
	}
	if !strings.Contains(stdout.String(), "1364 instance types of us-east-1, 1364 with an on-demand price, 4092 spot prices") {
		t.Errorf("summary %q", stdout.String())
	}
}

func offerings(it *cloudprovider.InstanceType) []cloudprovider.Offering {
	var out []cloudprovider.Offering
	for _, o := range it.Offerings {
		out = append(out, *o)
	}
	return out
}

func TestUsage(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), nil, &stdout); err == nil || !strings.Contains(err.Error(), "--region") {
		t.Errorf("no region: %v", err)
	}
}
