//go:build ignore

// gen_regional_prices extracts the initial on-demand prices upstream
// karpenter-provider-aws embeds for regions other than us-east-1 into
// ondemand-prices-by-region.json (numbers only; upstream is Apache-2.0).
//
//	git clone https://github.com/aws/karpenter-provider-aws /tmp/kpa
//	go run gen_regional_prices.go -repo /tmp/kpa -commit 1d927085dd81a9df9301e613f371dac5b4d16bfe
//
// -repo may be a work tree or a bare git directory: files are read with
// `git show COMMIT:PATH`, so the recorded commit is the one read.
//
// Which upstream files, and why:
//   - pkg/providers/pricing/zz_generated.pricing_aws.go holds us-east-1 only
//     (every version in upstream's history); aws-instance-types.json already
//     carries those prices, so it is not read again.
//   - pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go: us-gov-east-1
//     and us-gov-west-1, in USD. Extracted.
//   - pkg/providers/pricing/zz_generated.pricing_aws_cn.go: cn-north-1, in
//     CNY. Left out: the simulator reports USD.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const usGov = "pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go"

type source struct {
	Repository string   `json:"repository"`
	Commit     string   `json:"commit"`
	Paths      []string `json:"paths"`
	License    string   `json:"license"`
}

type metadata struct {
	Source      source   `json:"source"`
	GeneratedAt string   `json:"upstreamGeneratedAt"`
	Currency    string   `json:"currency"`
	Note        string   `json:"note"`
	Regions     []string `json:"regions"`
	LeftOut     []string `json:"leftOut"`
}

type file struct {
	Metadata metadata                      `json:"metadata"`
	Prices   map[string]map[string]float64 `json:"onDemandPricesUSDPerHourByRegion"`
}

func main() {
	repo := flag.String("repo", "", "karpenter-provider-aws checkout or git directory")
	commit := flag.String("commit", "", "commit to read (40 hex digits)")
	out := flag.String("o", "ondemand-prices-by-region.json", "output file")
	flag.Parse()
	if *repo == "" || len(*commit) != 40 {
		log.Fatal("usage: go run gen_regional_prices.go -repo DIR -commit SHA")
	}
	src, err := exec.Command("git", "-C", *repo, "show", *commit+":"+usGov).Output()
	if err != nil {
		log.Fatalf("git show %s:%s: %v", *commit, usGov, err)
	}
	prices, err := extract(src)
	if err != nil {
		log.Fatalf("%s: %v", usGov, err)
	}
	generated := ""
	if m := regexp.MustCompile(`// generated at (\S+)`).FindSubmatch(src); m != nil {
		generated = string(m[1])
	}
	var regions []string
	for r := range prices {
		regions = append(regions, r)
	}
	sort.Strings(regions)
	f := file{
		Metadata: metadata{
			Source: source{Repository: "github.com/aws/karpenter-provider-aws", Commit: *commit, Paths: []string{usGov},
				License: "Apache-2.0 (facts/numbers only reused)"},
			GeneratedAt: generated,
			Currency:    "USD",
			Note: "Linux on-demand USD/hour per region as embedded by Karpenter (its initial prices before the pricing API answers). " +
				"us-east-1 is in aws-instance-types.json; upstream's commercial pricing file covers us-east-1 only. " +
				"A type missing from a region's table is not offered there. Regenerate with gen_regional_prices.go.",
			Regions: regions,
			LeftOut: []string{"cn-north-1 (pkg/providers/pricing/zz_generated.pricing_aws_cn.go): prices are in CNY"},
		},
		Prices: prices,
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	n := 0
	for _, r := range regions {
		n += len(prices[r])
	}
	fmt.Printf("%s: %d prices in %s\n", *out, n, strings.Join(regions, ", "))
}

// extract reads map[string]map[ec2types.InstanceType]float64{"region": {"type": price, …}}.
func extract(src []byte) (map[string]map[string]float64, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "pricing.go", src, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	var walkErr error
	ast.Inspect(f, func(n ast.Node) bool {
		outer, ok := n.(*ast.CompositeLit)
		if !ok || walkErr != nil {
			return walkErr == nil
		}
		if _, isMap := outer.Type.(*ast.MapType); !isMap {
			return true
		}
		for _, el := range outer.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			region, err := strLit(kv.Key)
			if err != nil {
				walkErr = err
				return false
			}
			inner, ok := kv.Value.(*ast.CompositeLit)
			if !ok {
				walkErr = fmt.Errorf("region %s: not a map literal", region)
				return false
			}
			out[region] = map[string]float64{}
			for _, e := range inner.Elts {
				kv := e.(*ast.KeyValueExpr)
				name, err := strLit(kv.Key)
				if err != nil {
					walkErr = err
					return false
				}
				lit, ok := kv.Value.(*ast.BasicLit)
				if !ok {
					walkErr = fmt.Errorf("%s/%s: price is not a literal", region, name)
					return false
				}
				p, err := strconv.ParseFloat(lit.Value, 64)
				if err != nil {
					walkErr = fmt.Errorf("%s/%s: %v", region, name, err)
					return false
				}
				out[region][name] = p
			}
		}
		return false
	})
	if walkErr != nil {
		return nil, walkErr
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no price map found")
	}
	return out, nil
}

func strLit(e ast.Expr) (string, error) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", fmt.Errorf("key is not a string literal")
	}
	return strconv.Unquote(lit.Value)
}
