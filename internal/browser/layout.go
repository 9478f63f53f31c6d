package browser

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// layoutScript runs after a page's own script and writes what it finds into
// the DOM, for Layout to read back from --dump-dom:
//
//   - data-overlaps: every pair of non-empty <text> elements of one chart
//     whose boxes overlap by more than a pixel. Each pair is compared in the
//     first one's own coordinates (getCTM), the other's box as the rotated
//     rectangle it is there (separating-axis test), so slanted labels are
//     compared along their slant, not by their screen boxes, which would
//     always overlap.
//   - data-same-colours: every chart legend in which two entries have the
//     same swatch (a 12×10 rect's fill, or a line's stroke and dash).
const layoutScript = `<script>(function(){
var over=[],same=[];
function box(t){try{return t.getBBox();}catch(e){return null;}}
function corners(b,m){return [[b.x,b.y],[b.x+b.width,b.y],[b.x+b.width,b.y+b.height],[b.x,b.y+b.height]].map(function(p){return m?[m.a*p[0]+m.c*p[1]+m.e,m.b*p[0]+m.d*p[1]+m.f]:p;});}
function separated(p,q){
  var polys=[p,q];
  for(var k=0;k<2;k++){var g=polys[k];
    for(var e=0;e<4;e++){var u=g[e],v=g[(e+1)%4],nx=v[1]-u[1],ny=u[0]-v[0],l=Math.hypot(nx,ny);if(l===0)continue;nx/=l;ny/=l;
      var pr=function(P){var lo=Infinity,hi=-Infinity;P.forEach(function(c){var d=c[0]*nx+c[1]*ny;lo=Math.min(lo,d);hi=Math.max(hi,d);});return [lo,hi];};
      var A=pr(p),B=pr(q);if(Math.min(A[1],B[1])-Math.max(A[0],B[0])<=1)return true;}}
  return false;}
document.querySelectorAll("svg.chart").forEach(function(svg){
  var name=svg.getAttribute("aria-label")||"chart";
  var ts=[];
  svg.querySelectorAll("text").forEach(function(t){var b=box(t);if(b&&b.width>0&&t.textContent.trim()!=="")ts.push({t:t,b:b,m:t.getCTM()});});
  for(var i=0;i<ts.length;i++){
    var inv=ts[i].m.inverse(),a=ts[i].b;
    for(var j=i+1;j<ts.length;j++){
      var m=inv.multiply(ts[j].m),b=ts[j].b;
      var pa=corners(a,null),pb=corners(b,m);
      if(!separated(pa,pb))over.push(name+": "+JSON.stringify(ts[i].t.textContent)+" and "+JSON.stringify(ts[j].t.textContent));
    }
  }
  var seen={};
  svg.querySelectorAll("rect").forEach(function(r){
    if(r.getAttribute("width")!=="12.00"||r.getAttribute("height")!=="10.00")return;
    var f=(r.getAttribute("fill")||"").toLowerCase();
    if(seen[f])same.push(name+": "+f);seen[f]=true;
  });
  var lines={};
  svg.querySelectorAll("line[stroke]").forEach(function(l){
    var k=(l.getAttribute("stroke")||"").toLowerCase()+" "+(l.getAttribute("stroke-dasharray")||"");
    if(lines[k])same.push(name+": line "+k);lines[k]=true;
  });
});
document.documentElement.setAttribute("data-overlaps",over.join("\n"));
document.documentElement.setAttribute("data-same-colours",same.join("\n"));
document.documentElement.setAttribute("data-layout-checked","true");
})()</script>`

// Layout is what the layout check found on a page.
type Layout struct {
	// Overlaps lists the pairs of chart texts that overlap; SameColours the
	// legends with two entries drawn alike.
	Overlaps, SameColours []string
}

var layoutAttrRE = func(name string) *regexp.Regexp {
	return regexp.MustCompile(`<html[^>]*\b` + name + `="([^"]*)"`)
}

// CheckLayout loads page (the bytes of an HTML file) with the layout check
// appended, and returns its findings. It fails when the check did not run.
func CheckLayout(ctx context.Context, bin string, page []byte, dir string) (*Layout, error) {
	_, lay, err := LoadWithLayout(ctx, bin, page, dir, nil)
	return lay, err
}

// LoadWithLayout is Load and CheckLayout in one start of the browser, and
// the screenshot shot when it is not nil: page (the bytes of an HTML file)
// with the layout check appended, written into dir and loaded; the Page's
// DOM carries the check's attributes besides the page's own. The check
// compares texts in their charts' own coordinates, so the viewport a
// screenshot asks for does not change what it finds.
func LoadWithLayout(ctx context.Context, bin string, page []byte, dir string, shot *Screenshot) (*Page, *Layout, error) {
	path := filepath.Join(dir, "layout-check.html")
	withCheck := strings.Replace(string(page), "</body>", layoutScript+"</body>", 1)
	if err := os.WriteFile(path, []byte(withCheck), 0o644); err != nil {
		return nil, nil, err
	}
	p, err := loadShot(ctx, bin, path, shot)
	if err != nil {
		return nil, nil, err
	}
	if m := layoutAttrRE("data-layout-checked").FindStringSubmatch(p.DOM); m == nil {
		return nil, nil, &checkError{p.Log}
	}
	split := func(name string) []string {
		m := layoutAttrRE(name).FindStringSubmatch(p.DOM)
		if m == nil || m[1] == "" {
			return nil
		}
		return strings.Split(html.UnescapeString(m[1]), "\n")
	}
	return p, &Layout{Overlaps: split("data-overlaps"), SameColours: split("data-same-colours")}, nil
}

type checkError struct{ log string }

func (e *checkError) Error() string { return "the layout check did not run; browser log:\n" + e.log }
