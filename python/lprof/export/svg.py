"""Self-contained SVG flame graph: rectangles come from the C folder
(_lprof.fold_rows / fold_columns); a small embedded script (no external
file) sizes it to the window, fits labels to their boxes, zooms on click,
resets, and searches.

Drawn root at the top (an icicle), so the program's own frames stay in view
however tall library towers grow below them. Each frame keeps its layout in
data attributes (depth, start, width in the metric's unit); the script maps
them to pixels. Without scripts (an <img> tag), frames are placed in percent
of the width and labelled for a 1200 px wide view."""

from xml.sax.saxutils import escape, quoteattr

from ..common.files import atomic_path
from . import stack_rows

FALLBACK_WIDTH = 1200
ROW = 17
MIN_PX = 0.1
# frames narrower than this share of the total would be under MIN_PX wide
MIN_FRACTION = MIN_PX / FALLBACK_WIDTH
TOP = 2 * ROW  # title and buttons
CHAR_PX = 7  # 12 px monospace

_SCRIPT = """
var svg=document.documentElement,frames=[],zoomed=null,W=0;
function init(){var g=svg.getElementsByClassName('f');for(var i=0;i<g.length;i++){var e=g[i];
e.x0=+e.getAttribute('data-x');e.w0=+e.getAttribute('data-w');e.d=+e.getAttribute('data-d');
e.name=e.getAttribute('data-n');frames.push(e);e.addEventListener('click',onclick_frame);}
document.getElementById('reset').addEventListener('click',function(){zoom(null);});
document.getElementById('search').addEventListener('click',search);
window.addEventListener('resize',function(){layout();});layout();}
function onclick_frame(ev){zoom(ev.currentTarget);}
function zoom(e){zoomed=e;layout();
document.getElementById('reset').style.display=e?'inline':'none';}
function layout(){W=Math.max(svg.getBoundingClientRect().width||window.innerWidth||1200,200);
var T=+svg.getAttribute('data-total'),x0=0,w0=T,d0=0;
if(zoomed){x0=zoomed.x0;w0=zoomed.w0;d0=zoomed.d;}
var sc=(W-20)/(w0||1);
for(var i=0;i<frames.length;i++){var e=frames[i],r=e.firstElementChild.nextElementSibling,
t=r.nextElementSibling,x,w,anc=false;
if(e.d<d0){if(e.x0<=x0&&e.x0+e.w0>=x0+w0){x=10;w=W-20;anc=true;}else{e.style.display='none';continue;}}
else if(e.x0>=x0&&e.x0+e.w0<=x0+w0){x=10+(e.x0-x0)*sc;w=e.w0*sc;}
else{e.style.display='none';continue;}
if(w<0.1){e.style.display='none';continue;}
e.style.display='';e.classList.toggle('anc',anc);
r.setAttribute('x',x.toFixed(1));r.setAttribute('width',Math.max(w-0.5,0.1).toFixed(1));
t.setAttribute('x',x.toFixed(1));t.textContent=fit(e.name,w);}}
function fit(name,w){var n=Math.floor((w-6)/CHAR);if(n<3)return '';
return name.length<=n?name:name.slice(0,n-1)+'\\u2026';}
function search(){var t=prompt('Search frames (regular expression); empty to clear');if(t===null)return;
var re=null;try{re=t?new RegExp(t):null;}catch(err){alert('Not a regular expression: '+t);return;}
var n=0;for(var i=0;i<frames.length;i++){var e=frames[i],r=e.firstElementChild.nextElementSibling;
if(re&&re.test(e.firstElementChild.textContent)){r.setAttribute('fill','#c3f');n++;}else{r.setAttribute('fill',r.getAttribute('data-c'));}}
document.getElementById('matched').textContent=re?('matched '+n+' frames'):'';}
"""


def _color(name):
    h = 0
    for ch in name:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    return "rgb(%d,%d,%d)" % (205 + h % 50, 80 + (h >> 8) % 120, (h >> 16) % 60)


def short_name(name):
    """The label drawn in a box: `func (file.py:12)` without the folders (the
    hover title keeps the full path)."""
    if name.endswith(")") and " (" in name:
        func, where = name[:-1].rsplit(" (", 1)
        return f"{func} ({where.rsplit('/', 1)[-1]})"
    return name


def _fit(name, px):
    chars = int((px - 6) / CHAR_PX)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[: chars - 1] + "\u2026"


def write_svg(
    names,
    rects,
    total,
    out_path,
    title="lprof",
    unit="us",
    whole=None,
    whole_name=None,
    decorate=None,
    legend=None,
    extra_style="",
):
    """rects: (depth, name id, x, width) from _lprof.fold_rows; total: their
    scale. whole (same unit): what each frame's percent is a share of, the
    process's whole CPU or wall time (the flame may hold less of it:
    lprof's own code, threads without Python); the total where None.
    decorate(i) -> (fill, extra classes, text added to the title) of rects[i]
    recolours frames (the diff flame graph); legend: a line of text under the
    buttons; extra_style: CSS added to the picture's."""
    whole = whole if whole and whole >= total else total
    depth = 1 + max((r[0] for r in rects), default=0)
    height = TOP + depth * ROW + ROW
    scale = (FALLBACK_WIDTH - 20) / total if total else 0
    out = [
        '<?xml version="1.0" standalone="no"?>',
        f'<svg version="1.1" width="100%" height="{height}" data-total="{total}" '
        f'onload="init()" xmlns="http://www.w3.org/2000/svg">',
        f'<script type="text/ecmascript"><![CDATA[var CHAR={CHAR_PX};{_SCRIPT}]]></script>',
        '<style>text{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}'
        ".f{cursor:pointer}.f:hover rect{stroke:#000;stroke-width:0.7}"
        ".f.anc rect{fill:#ddd}.b{cursor:pointer;fill:#04c}" + extra_style + "</style>",
        f'<rect x="0" y="0" width="100%" height="{height}" fill="#f8f8f8"/>',
        f'<text x="10" y="14">{escape(title)} (total {total} {escape(unit)}'
        + (
            f", {100.0 * total / whole:.1f}% of {escape(whole_name)} ({whole} {escape(unit)})"
            if whole_name and whole != total
            else ""
        )
        + "; percents are shares of "
        + (escape(whole_name) if whole_name else "the total")
        + "; click a frame to zoom)</text>",
        f'<text id="search" class="b" x="10" y="{ROW + 12}">Search</text>',
        f'<text id="reset" class="b" x="70" y="{ROW + 12}" style="display:none">Reset zoom</text>',
        f'<text id="matched" x="170" y="{ROW + 12}"></text>',
    ]
    if legend:
        out.append(f'<text x="320" y="{ROW + 12}">{escape(legend)}</text>')
    for i, (d, name_id, x, w) in enumerate(rects):
        name = names[name_id]
        pw = w * scale
        y = TOP + d * ROW
        pct = 100.0 * w / total if total else 0
        share = 100.0 * w / whole if whole else 0
        color, classes, note = decorate(i) if decorate else (_color(name), "", "")
        short = short_name(name)
        out.append(
            f'<g class="f{" " + classes if classes else ""}" data-d="{d}" data-x="{x}" '
            f'data-w="{w}" data-n={quoteattr(short)}>'
            f"<title>{escape(name)} ({w} {escape(unit)}, {share:.2f}%{escape(note)})</title>"
            f'<rect x="{100.0 * x / total if total else 0:.4f}%" y="{y}" '
            f'width="{pct:.4f}%" height="{ROW - 1}" fill="{color}" data-c="{color}" rx="2"/>'
            f'<text x="{100.0 * x / total if total else 0:.4f}%" dx="3" y="{y + 12}">'
            f"{escape(_fit(short, pw))}</text></g>"
        )
    out.append("</svg>")
    with atomic_path(out_path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("\n".join(out) + "\n")


def write(profile, path, metric="cpu", fold_imports=True):
    """The flame graph of one stack metric; importlib's frames folded into one
    frame per import unless fold_imports is False (lprof.model.import_fold)."""
    _cols, unit, _scale = stack_rows.metric_columns(metric)
    profile = stack_rows.for_metric(profile, metric)
    st = profile.get("stacks") or {}
    if fold_imports:
        st = stack_rows.fold_imports(st)
    st = stack_rows.thread_roots(profile, st)
    names, (_lines, total, rects) = stack_rows.fold(st, metric, None, MIN_FRACTION)
    whole, whole_name = _time_whole(profile, metric, unit)
    write_svg(
        names, rects, total, path, title=f"lprof {metric}", unit=unit, whole=whole, whole_name=whole_name
    )


def _time_whole(profile, metric, unit):
    """(the process's whole CPU or wall time in the flame's unit, its name)
    for the time metrics; (None, None) for the others (bytes, GPU time: the
    flame's total is their whole)."""
    if metric not in ("cpu", "wall") or unit != "us" or not profile.get("sampling"):
        return None, None
    from ..model import shares

    parts = shares.breakdown(profile)
    seconds = parts["cpu_whole_s"] if metric == "cpu" else parts["wall_whole_s"]
    name = "the process's CPU time" if metric == "cpu" else "the wall time summed over threads"
    return (int(round(seconds * 1e6)) if seconds else None), name
