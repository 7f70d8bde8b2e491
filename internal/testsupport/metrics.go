package testsupport

import (
	"fmt"
	"io"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is a /metrics page in the Prometheus text format, parsed by the
// Prometheus text parser itself: a page that does not parse is an error.
type Scrape map[string]*dto.MetricFamily

// ParseScrape parses a /metrics page.
func ParseScrape(r io.Reader) (Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return Scrape(fams), nil
}

// ScrapeFamilies is a scrape of already gathered families (a registry's
// Gather).
func ScrapeFamilies(fams []*dto.MetricFamily) Scrape {
	s := Scrape{}
	for _, f := range fams {
		s[f.GetName()] = f
	}
	return s
}

// Sum is the sum of the samples of name whose labels include every
// key, value pair of labels; found is whether any matched. For a
// histogram, name_count and name_sum read its count and sum.
func (s Scrape) Sum(name string, labels ...string) (sum float64, found bool) {
	fam, part := s[name], ""
	for _, suffix := range []string{"_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && fam == nil && s[base].GetType() == dto.MetricType_HISTOGRAM {
			fam, part = s[base], suffix
		}
	}
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		case m.Histogram != nil && part == "_sum":
			sum += m.Histogram.GetSampleSum()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		ok := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// Names are every series name the scrape holds, a histogram's _bucket,
// _sum and _count included, sorted.
func (s Scrape) Names() []string {
	var names []string
	for name, f := range s {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			names = append(names, name+"_bucket", name+"_sum", name+"_count")
		case dto.MetricType_SUMMARY:
			names = append(names, name, name+"_sum", name+"_count")
		default:
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
