package v1

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Never is the value that disables a duration-based behaviour
// (consolidateAfter, expireAfter).
const Never = "Never"

// NillableDuration is a duration that may be "Never". A nil Duration means Never.
// It marshals to and from a JSON string such as "30s", "720h" or "Never".
type NillableDuration struct {
	*time.Duration `json:"-"`
	// raw keeps the user's spelling so a round trip is byte-identical.
	raw []byte
}

// MustParseNillableDuration parses s ("Never" or a Go duration) and panics on error.
// For constants in code and tests only.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// ParseNillableDuration parses "Never" or a Go duration string.
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		return NillableDuration{raw: []byte(`"Never"`)}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("%q is neither a duration such as 30s, 15m, 720h nor %q", s, Never)
	}
	raw, _ := json.Marshal(s)
	return NillableDuration{Duration: &d, raw: raw}, nil
}

// ShortDuration is d as a person writes it in a NodePool: 720h, 1h30m, 90s
// rather than 720h0m0s.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// IsNever reports whether the duration is "Never".
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// UnmarshalJSON accepts "Never" or a duration string.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\" or \"Never\": %w", err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// MarshalJSON writes the duration as the user spelled it, or Go's canonical form.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	if d.raw != nil {
		return d.raw, nil
	}
	if d.Duration == nil {
		return json.Marshal(Never)
	}
	return json.Marshal(d.Duration.String())
}

// String renders the duration the way it would be written in a manifest.
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// DeepCopyInto copies the duration; it is written by hand because the raw
// spelling is unexported.
func (d *NillableDuration) DeepCopyInto(out *NillableDuration) {
	*out = NillableDuration{}
	if d.Duration != nil {
		v := *d.Duration
		out.Duration = &v
	}
	if d.raw != nil {
		out.raw = append([]byte(nil), d.raw...)
	}
}

// DeepCopy returns a copy of the duration.
func (d *NillableDuration) DeepCopy() *NillableDuration {
	if d == nil {
		return nil
	}
	out := new(NillableDuration)
	d.DeepCopyInto(out)
	return out
}
