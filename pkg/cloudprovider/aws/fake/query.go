package fake

import (
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// list is an ec2Query list: prefix.1, prefix.2, … until one is missing.
func list(q url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		key := prefix + "." + strconv.Itoa(i)
		if _, ok := q[key]; !ok {
			return out
		}
		out = append(out, q.Get(key))
	}
}

// indexes are the N of prefix.N.… keys present, in order (members of a
// list of structures).
func indexes(q url.Values, prefix string) []string {
	seen := map[int]bool{}
	for key := range q {
		rest, ok := strings.CutPrefix(key, prefix+".")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ".")
		if i, err := strconv.Atoi(n); err == nil {
			seen[i] = true
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	prefixes := make([]string, len(out))
	for i, n := range out {
		prefixes[i] = prefix + "." + strconv.Itoa(n)
	}
	return prefixes
}

// tagList reads prefix.N.Key / prefix.N.Value.
func tagList(q url.Values, prefix string) map[string]string {
	tags := map[string]string{}
	for _, p := range indexes(q, prefix) {
		tags[q.Get(p+".Key")] = q.Get(p + ".Value")
	}
	return tags
}

// tagSpecifications reads TagSpecification.N.{ResourceType,Tag.M} into
// tags by resource type.
func tagSpecifications(q url.Values, prefix string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, p := range indexes(q, prefix) {
		rt := q.Get(p + ".ResourceType")
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for k, v := range tagList(q, p+".Tag") {
			out[rt][k] = v
		}
	}
	return out
}

// filter is one EC2 Filter.N: a name and the values any of which matches.
type filter struct {
	name   string
	values []string
}

func filters(q url.Values) []filter {
	var out []filter
	for _, p := range indexes(q, "Filter") {
		out = append(out, filter{name: q.Get(p + ".Name"), values: list(q, p+".Value")})
	}
	return out
}

// attributes answers what a resource has for a filter name; ok is false
// for a name the resource cannot be filtered by.
type attributes func(name string) (values []string, ok bool)

// matches reports whether a resource with attrs and tags passes every
// filter; an unknown filter name is AWS's InvalidParameterValue.
func matches(fs []filter, tags map[string]string, attrs attributes) (bool, error) {
	for _, fl := range fs {
		var have []string
		switch {
		case strings.HasPrefix(fl.name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(fl.name, "tag:")]; ok {
				have = []string{v}
			}
		case fl.name == "tag-key":
			for k := range tags {
				have = append(have, k)
			}
		default:
			var ok bool
			if have, ok = attrs(fl.name); !ok {
				return false, badRequest("InvalidParameterValue", "The filter '%s' is invalid", fl.name)
			}
		}
		if !anyMatch(fl.values, have) {
			return false, nil
		}
	}
	return true, nil
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if glob(p, v) {
				return true
			}
		}
	}
	return false
}

// glob matches EC2 filter wildcards: * any run, ? one character.
func glob(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	var b strings.Builder
	b.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String()).MatchString(s)
}

// page cuts n items into the page NextToken (an offset) and MaxResults
// (default and cap limit) ask for: the range [from, to) and the next token.
func page(q url.Values, n, limit int) (from, to int, next string, err error) {
	size := limit
	if s := q.Get("MaxResults"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return 0, 0, "", badRequest("InvalidParameterValue", "MaxResults %q is invalid", s)
		}
		size = min(v, limit)
	}
	if t := q.Get("NextToken"); t != "" {
		v, err := strconv.Atoi(t)
		if err != nil || v < 0 || v > n {
			return 0, 0, "", badRequest("InvalidNextToken", "The token %q is invalid", t)
		}
		from = v
	}
	to = min(from+size, n)
	if to < n {
		next = strconv.Itoa(to)
	}
	return from, to, next, nil
}

func values(s ...string) []string { return s }

func copyTags(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

type xmlTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func xmlTags(m map[string]string) []xmlTag {
	out := make([]xmlTag, 0, len(m))
	for k, v := range m {
		out = append(out, xmlTag{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
