// Canvas plots for the pages: a heatmap of one 2D slice, a line plot of one 1D row, grouped bars.

// Diverging map around 0: blue for negative, near-white for 0, red for positive (scaled by max |v|).
const NEG = [59, 76, 192], MID = [242, 242, 242], POS = [180, 4, 38], BAD = [255, 0, 255];

function color(v, scale) {
  if (!Number.isFinite(v)) return BAD;
  const t = scale > 0 ? Math.max(-1, Math.min(1, v / scale)) : 0;
  const end = t < 0 ? NEG : POS, a = Math.abs(t);
  return MID.map((m, i) => Math.round(m + (end[i] - m) * a));
}

function range(data, offset, count) {
  let min = Infinity, max = -Infinity;
  for (let i = offset; i < offset + count; i++) {
    const v = data[i];
    if (Number.isFinite(v)) { min = Math.min(min, v); max = Math.max(max, v); }
  }
  return min <= max ? { min, max } : { min: 0, max: 0 };
}

/** Draws data[offset .. offset + h*w) as an h x w heatmap filling the canvas; returns the value range. */
export function drawHeatmap(canvas, data, offset, h, w) {
  const { min, max } = range(data, offset, h * w);
  const scale = Math.max(Math.abs(min), Math.abs(max));
  // Pixels stay square: the canvas takes the slice's aspect ratio, at most 480 px on its long side.
  const cell = Math.max(1, Math.floor(480 / Math.max(h, w)));
  canvas.width = w * cell;
  canvas.height = h * cell;
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(canvas.width, canvas.height);
  for (let r = 0; r < h; r++) {
    for (let c = 0; c < w; c++) {
      const rgb = color(data[offset + r * w + c], scale);
      for (let dy = 0; dy < cell; dy++) {
        let p = ((r * cell + dy) * canvas.width + c * cell) * 4;
        for (let dx = 0; dx < cell; dx++, p += 4) {
          image.data[p] = rgb[0]; image.data[p + 1] = rgb[1]; image.data[p + 2] = rgb[2]; image.data[p + 3] = 255;
        }
      }
    }
  }
  ctx.putImageData(image, 0, 0);
  return { min, max };
}

/** Draws data[offset .. offset + length) as a line with a zero axis; returns the value range. */
export function drawLine(canvas, data, offset, length) {
  const { min, max } = range(data, offset, length);
  canvas.width = 640;
  canvas.height = 240;
  const ctx = canvas.getContext("2d");
  const pad = 12, lo = Math.min(min, 0), hi = Math.max(max, 0), span = hi - lo || 1;
  const x = (i) => pad + (length > 1 ? (i / (length - 1)) * (canvas.width - 2 * pad) : (canvas.width - 2 * pad) / 2);
  const y = (v) => canvas.height - pad - ((v - lo) / span) * (canvas.height - 2 * pad);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.strokeStyle = "#bbb";
  ctx.beginPath(); ctx.moveTo(pad, y(0)); ctx.lineTo(canvas.width - pad, y(0)); ctx.stroke();
  ctx.strokeStyle = "#b40426";
  ctx.lineWidth = 2;
  ctx.beginPath();
  for (let i = 0; i < length; i++) {
    const v = Number.isFinite(data[offset + i]) ? data[offset + i] : 0;
    if (i === 0) ctx.moveTo(x(i), y(v)); else ctx.lineTo(x(i), y(v));
  }
  ctx.stroke();
  return { min, max };
}

const PALETTE = ["#3b4cc0", "#e07b39", "#2a9d8f", "#9b5de5", "#b40426"];

/** Horizontal grouped bars: groups = [{label, bars: [{name, value}]}]; one colour per bar name. */
export function drawBars(canvas, groups, unit = "ms") {
  const names = [...new Set(groups.flatMap((g) => g.bars.map((b) => b.name)))];
  const barH = 16, gap = 10, legendH = 24;
  const width = Math.max(300, Math.min(900, (canvas.parentElement?.clientWidth || 800) - 2)); // less the border
  const rows = groups.reduce((n, g) => n + Math.max(1, g.bars.length), 0);
  const height = legendH + rows * barH + groups.length * gap + 10;
  // Drawn at the screen's pixel density, shown at CSS size: sharp text on high-DPI screens.
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, height);
  ctx.font = "12px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  names.forEach((name, i) => {
    ctx.fillStyle = PALETTE[i % PALETTE.length];
    ctx.fillRect(8 + i * 170, 6, 12, 12);
    ctx.fillStyle = "#222";
    ctx.fillText(name, 24 + i * 170, 12);
  });
  const max = Math.max(1e-9, ...groups.flatMap((g) => g.bars.map((b) => b.value ?? 0)));
  const labelW = Math.min(190, width * 0.35), plotW = width - labelW - 70;
  let top = legendH;
  for (const group of groups) {
    ctx.fillStyle = "#222";
    ctx.fillText(group.label.length > 28 ? `${group.label.slice(0, 27)}…` : group.label, 6,
      top + (Math.max(1, group.bars.length) * barH) / 2);
    group.bars.forEach((bar, i) => {
      const y = top + i * barH;
      ctx.fillStyle = PALETTE[names.indexOf(bar.name) % PALETTE.length];
      const w = bar.value == null ? 0 : Math.max(1, (bar.value / max) * plotW);
      ctx.fillRect(labelW, y + 1, w, barH - 2);
      ctx.fillStyle = "#222";
      ctx.fillText(bar.value == null ? "n/a" : `${bar.value.toFixed(2)} ${unit}`, labelW + w + 4, y + barH / 2);
    });
    top += Math.max(1, group.bars.length) * barH + gap;
  }
}
