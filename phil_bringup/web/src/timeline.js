// The scrolling hit-error timeline: detected impact minus commanded hit, per instrument.
const WINDOW_S = 30;
const RANGE_MS = 10;
const COLORS = ['#ffd54f', '#4fc3f7', '#ff8a65', '#aed581', '#ba68c8', '#f06292', '#4db6ac',
  '#e0e0e0', '#9575cd', '#ffb74d'];

export class Timeline {
  constructor(canvas) {
    this.canvas = canvas;
    this.points = [];
    this.colors = new Map();
  }

  add(errors) {
    for (const error of errors) this.points.push(error);
  }

  color(instrument) {
    if (!this.colors.has(instrument)) {
      this.colors.set(instrument, COLORS[this.colors.size % COLORS.length]);
    }
    return this.colors.get(instrument);
  }

  draw(nowS) {
    const canvas = this.canvas;
    if (canvas.width !== canvas.clientWidth) canvas.width = canvas.clientWidth;
    const g = canvas.getContext('2d');
    const { width, height } = canvas;
    g.clearRect(0, 0, width, height);
    const y = (ms) => height / 2 - (Math.max(-RANGE_MS, Math.min(RANGE_MS, ms)) / RANGE_MS) * (height / 2 - 14);
    g.strokeStyle = '#2f3742';
    g.fillStyle = '#7d8a99';
    g.font = '11px system-ui';
    for (const ms of [-RANGE_MS, -5, 0, 5, RANGE_MS]) {
      g.beginPath();
      g.moveTo(40, y(ms));
      g.lineTo(width, y(ms));
      g.stroke();
      g.fillText(`${ms} ms`, 2, y(ms) + 4);
    }
    this.points = this.points.filter((p) => nowS - p.time_s < WINDOW_S);
    for (const p of this.points) {
      const x = 40 + (1 - (nowS - p.time_s) / WINDOW_S) * (width - 40);
      g.fillStyle = this.color(p.instrument);
      g.fillRect(x - 2, y(p.error_ms) - 2, 4, 4);
    }
    let legend = 44;
    for (const [instrument, color] of this.colors) {
      g.fillStyle = color;
      g.fillText(instrument, legend, 12);
      legend += g.measureText(instrument).width + 12;
    }
    g.fillStyle = '#7d8a99';
    g.fillText('hit error: detected - commanded (last 30 s)', width - 250, height - 4);
  }
}
