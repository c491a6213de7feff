package tpl

import (
	"fmt"
	"math"
)

// The template JSON form carries a template's metadata (Metadata) in
// optional members: a "description" and "derived" metrics per template,
// and per VOI "unit", "scale", "help", "kind" ("counter" or "gauge") and
// "count" (the companion count VOI's name):
//
//	{"format": "statsblob-template", "version": 2, "name": "HTTP", "hash": 1,
//	 "description": "HTTP server requests",
//	 "vois": [{"id": 0, "name": "latency_us", "dtype": "INT_U32", "stats": [{"type": "SUM"}],
//	           "unit": "seconds", "scale": 1e-06, "help": "request latency", "count": "requests"}, ...],
//	 "derived": [{"name": "latency_mean", "op": "average", "of": "latency_us", "by": "requests"}]}
//
// A template without metadata has none of them, so its form is what it
// was before metadata existed. They came with version 2 and are written in
// whichever version the template's bounds take (version 1 for bounds no
// value gives: the metadata is not lost), and read in both.

type jsonTemplateMeta struct {
	Description string        `json:"description,omitempty"`
	Derived     []jsonDerived `json:"derived,omitempty"`
}

type jsonDerived struct {
	Name  string `json:"name"`
	Op    string `json:"op"`
	Of    string `json:"of,omitempty"`
	By    string `json:"by,omitempty"`
	SumSq string `json:"sumsq,omitempty"`
	Unit  string `json:"unit,omitempty"`
	Help  string `json:"help,omitempty"`
}

type jsonVOIMeta struct {
	Unit  string  `json:"unit,omitempty"`
	Scale float64 `json:"scale,omitempty"`
	Help  string  `json:"help,omitempty"`
	Kind  string  `json:"kind,omitempty"`
	Count string  `json:"count,omitempty"`
}

// metaLocked returns the template's metadata (t.mu held).
func (t *Template) metaLocked() metadata {
	m := t.meta
	m.derived = append([]Derived(nil), m.derived...)
	vs := make(map[int32]VOIMeta, len(m.vois))
	for id, v := range m.vois {
		vs[id] = v
	}
	m.vois = vs
	return m
}

// putJSONMeta adds metadata m to the JSON form jt.
func putJSONMeta(jt *jsonTemplate, m metadata) {
	if m.empty() {
		return
	}
	jt.Description = m.desc
	for _, d := range m.derived {
		jt.Derived = append(jt.Derived, jsonDerived{Name: d.Name, Op: string(d.Op), Of: d.Of, By: d.By, SumSq: d.SumSq, Unit: d.Unit, Help: d.Help})
	}
	for i := range jt.VOIs {
		if v, ok := m.vois[jt.VOIs[i].ID]; ok {
			jt.VOIs[i].jsonVOIMeta = jsonVOIMeta{Unit: v.Unit, Scale: v.Scale, Help: v.Help, Kind: v.Kind.String(), Count: v.Count}
		}
	}
}

// jsonMetadata returns the metadata of the document jt.
func jsonMetadata(jt *jsonTemplate) (Metadata, error) {
	m := Metadata{Description: jt.Description}
	for _, v := range jt.VOIs {
		if v.jsonVOIMeta == (jsonVOIMeta{}) {
			continue
		}
		vm := VOIMeta{Unit: v.Unit, Scale: v.Scale, Help: v.Help, Count: v.Count}
		switch v.Kind {
		case "":
		case "counter":
			vm.Kind = KindCounter
		case "gauge":
			vm.Kind = KindGauge
		default:
			return m, fmt.Errorf("VOI %d: kind %q (counter or gauge)", v.ID, v.Kind)
		}
		if math.IsNaN(vm.Scale) || vm.Scale < 0 {
			return m, fmt.Errorf("VOI %d: scale %v", v.ID, vm.Scale)
		}
		if m.VOIs == nil {
			m.VOIs = map[int32]VOIMeta{}
		}
		m.VOIs[v.ID] = vm
	}
	for _, d := range jt.Derived {
		m.Derived = append(m.Derived, Derived{Name: d.Name, Op: Op(d.Op), Of: d.Of, By: d.By, SumSq: d.SumSq, Unit: d.Unit, Help: d.Help})
	}
	return m, nil
}
