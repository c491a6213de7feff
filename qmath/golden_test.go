package qmath

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const goldenDir = "../testdata/conformance/golden"

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir, name))
	require.NoError(t, err)
	return string(b)
}

// TestGoldenVectors renders raw Q values printed by the conformance goldens
// (dump layout) and compares with the goldens' renderings (dump freeform).
func TestGoldenVectors(t *testing.T) {
	tests := []struct {
		file   string
		q      Q
		layout string // how dump layout prints the raw bits ("" if it does not)
		text   string
	}{
		// 30_q_types: SUM/MAX/MIN of Q_S64/16, Q_U32/8, Q_S32/4, Q_U64/32.
		{"30_q_types.out", New(S64, 0x800000000006000c), "val=q64raw=0x800000000006000c", "-0.7500152587890625"},
		{"30_q_types.out", New(S64, 0x00000000000c0004), "val=q64raw=0x00000000000c0004", "1.5000000000000000"},
		{"30_q_types.out", New(S64, 0x8000000000120004), "val=q64raw=0x8000000000120004", "-2.2500000000000000"},
		{"30_q_types.out", New(U32, 0x00001e0b), "val=q32raw=0x00001e0b", "3.75390625"},
		{"30_q_types.out", New(U32, 0x00001e03), "val=q32raw=0x00001e03", "3.75000000"},
		{"30_q_types.out", New(U32, 0x0000000b), "val=q32raw=0x0000000b", "0.00390625"},
		{"30_q_types.out", New(S32, 0x000003c1), "val=q32raw=0x000003c1", "7.5000"},
		{"30_q_types.out", New(U64, 0x0000001200000005), "val=q64raw=0x0000001200000005", "2.25000000000000000000000000000000"},
		// t-digest centroid means are s64q.
		{"30_q_types.out", New(S64, 0x0000032400000005), "muraw=0x0000032400000005", "{mu=100.50000000000000000000000000000000,"},
		// The initial MAX/MIN values: what a reset writes (defect 2).
		{"30_q_types.out", qv(S64, c16, 0).SetIFVal(S64.Int(IFMinVal(S64))), "", "voistatdata: -17592186044415.9999847412109375\n"},
		{"30_q_types.out", qv(S64, c16, 0).SetIFVal(S64.Int(IFMaxVal(S64))), "", "voistatdata: 17592186044415.9999847412109375\n"},
		{"30_q_types.out", qv(U32, c8, 0).SetIFVal(U32.Int(IFMaxVal(U32))), "", "voistatdata: 2097151.99609375\n"},
		{"30_q_types.out", qv(S32, c4, 0).SetIFVal(S32.Int(IFMinVal(S32))), "", "voistatdata: -16777215.9375\n"},
		{"30_q_types.out", qv(U64, c32, 0).SetIFVal(U64.Int(IFMaxVal(U64))), "", "voistatdata: 536870911.99999999976716935634613037109375\n"},
		{"30_q_types.out", qv(U32, c8, 0).SetIFVal(U32.Int(IFMinVal(U32))), "", "voistatdata: 0.00000000\n"},
		// 35_fixed_defects: no integer bits (defect 1d) ...
		{"35_fixed_defects.out", New(U32, 0xc0000005), "val=q32raw=0xc0000005", "voistatdata: 0.75000000000000000000000000000\n"},
		{"35_fixed_defects.out", New(S32, 0x90000005), "val=q32raw=0x90000005", "voistatdata: -0.1250000000000000000000000000\n"},
		// ... and TDGSTCLUST32 means, s32q (defects 5 and 6).
		{"35_fixed_defects.out", New(S32, 0x8001f401), "muraw=0x8001f401", "{mu=-1000.0000,"},
		{"35_fixed_defects.out", New(S32, 0x800097f1), "muraw=0x800097f1", "{mu=-303.8750,"},
		{"35_fixed_defects.out", New(S32, 0x0000b3d9), "muraw=0x0000b3d9", "{mu=359.6875,"},
		{"35_fixed_defects.out", New(S32, 0x00000ee1), "muraw=0x00000ee1", "{mu=29.7500,"},
		{"35_fixed_defects.out", New(S32, 0x800000b1), "muraw=0x800000b1", "{mu=-1.3750,"},
		{"35_fixed_defects.out", New(S32, 0x80000151), "muraw=0x80000151", "{mu=-2.6250,"},
		{"35_fixed_defects.out", New(S32, 0x00000109), "muraw=0x00000109", "{mu=2.0625,"},
	}
	for _, tc := range tests {
		golden := readGolden(t, tc.file)
		if tc.layout != "" {
			require.Contains(t, golden, tc.layout, "vector not in %s", tc.file)
		}
		require.Contains(t, golden, tc.text, "vector not in %s", tc.file)
		text := strings.TrimSuffix(strings.TrimPrefix(tc.text, "voistatdata: "), "\n")
		text = strings.TrimSuffix(strings.TrimPrefix(text, "{mu="), ",")
		require.Equal(t, text, tc.q.String(), "%s raw %#x", tc.file, tc.q.Raw)
	}
}

var ctdLine = regexp.MustCompile(`ctd\[\d+\]: .* color=(-?\d+) muraw=0x([0-9a-f]+) cnt=(-?\d+)`)

// commands splits a golden into its commands: the echo line ("> ...") and
// the output lines that follow it.
func commands(golden string) (echo, out []string) {
	for _, block := range strings.Split("\n"+golden, "\n> ")[1:] {
		line, rest, _ := strings.Cut(block, "\n")
		echo = append(echo, line)
		out = append(out, rest)
	}
	return echo, out
}

// TestGoldenCentroids renders the mean of every t-digest centroid in the
// tree (colour 0 or 1) of every golden's "dump layout" (s32q for
// TDGSTCLUST32, printed with 8 hex digits, else s64q) and checks it against
// the freeform/JSON dumps of the same blob that directly follow it.
func TestGoldenCentroids(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.out"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	checked := 0
	for _, f := range files {
		echo, out := commands(readGolden(t, filepath.Base(f)))
		for c := range echo {
			kind, blob, _ := strings.Cut(echo[c], " ")
			if kind != "dump" || !strings.HasPrefix(blob, "layout") {
				continue
			}
			blob = strings.TrimSpace(strings.TrimPrefix(blob, "layout"))
			// The renderings of the same state: the dumps of the same blob
			// that follow.
			var rendered strings.Builder
			for d := c + 1; d < len(echo); d++ {
				words := strings.Fields(echo[d])
				if len(words) < 2 || words[0] != "dump" || strings.Join(words[2:], " ") != blob {
					break
				}
				if strings.HasPrefix(words[1], "freeform") || strings.HasPrefix(words[1], "json") {
					rendered.WriteString(out[d])
				}
			}
			if rendered.Len() == 0 {
				continue
			}
			for _, m := range ctdLine.FindAllStringSubmatch(out[c], -1) {
				if m[1] == "-1" {
					continue // a free slot (not in the tree), maybe stale
				}
				raw, err := strconv.ParseUint(m[2], 16, 64)
				require.NoError(t, err)
				k := S64
				if len(m[2]) == 8 {
					k = S32
				}
				text := New(k, raw).String()
				ff := fmt.Sprintf("mu=%s,cnt=%s}", text, m[3])
				js := fmt.Sprintf(`"mu":%s,"cnt":%s}`, text, m[3])
				r := rendered.String()
				require.True(t, strings.Contains(r, ff) || strings.Contains(r, js),
					"%s: %s: %s not rendered", filepath.Base(f), m[0], text)
				checked++
			}
		}
	}
	require.Greater(t, checked, 20)
	t.Logf("%d centroid means checked", checked)
}
