package budget

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStartAppendsOneLinePerPhaseToThisProcessFile(t *testing.T) {
	t.Setenv("ARTIFACTS", t.TempDir())
	clock := time.Now()
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = time.Now })
	done := Start("spec a", "install", func() bool { return true })
	clock = clock.Add(20 * time.Millisecond)
	done()
	Start("spec a", "csv-gone", nil)()
	files, _ := filepath.Glob(filepath.Join(Dir(), "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("files %v, want one for this process", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, e)
	}
	if len(got) != 2 || got[0].Phase != "install" || !got[0].Failed || got[0].Seconds < 0.02 || got[1].Phase != "csv-gone" || got[1].Failed {
		t.Fatalf("entries %+v", got)
	}
}
