// The dashboard's charts, on Chart.js. Each builder takes a <canvas> and plain data and returns the Chart.
// Live charts are kept in `charts` by name (also reachable as window.tsum.charts, for tests and the console).
import {
  BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, LineController, LineElement,
  LogarithmicScale, PointElement, ScatterController, Tooltip,
} from 'chart.js';
import { PHASES, money, seconds } from './format.js';
import { headroomUnderStep, resources } from './stats.js';

Chart.register(BarController, BarElement, CategoryScale, Legend, LinearScale, LineController, LineElement,
  LogarithmicScale, PointElement, ScatterController, Tooltip);
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

export const PHASE_COLOURS = {
  startup: '#4e79a7', install: '#f28e2b', load_data: '#e15759', start: '#76b7b2',
  learn: '#59a14f', verify: '#edc948', save: '#b07aa1', poweroff: '#9c755f',
};
const RULE_COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#76b7b2', '#9c755f', '#edc948'];

export const charts = new Map();
window.tsum = { charts };

function make(name, canvas, config) {
  charts.get(name)?.destroy();
  const chart = new Chart(canvas, config);
  charts.set(name, chart);
  return chart;
}

export function destroyCharts() {
  for (const chart of charts.values()) chart.destroy();
  charts.clear();
}

// Whiskers of ±stderr at the end of each stacked segment (dataset.errors[i], in data units).
const errorBars = {
  id: 'errorBars',
  afterDatasetsDraw(chart) {
    const { ctx, scales: { x } } = chart;
    ctx.save();
    ctx.strokeStyle = '#1f2328';
    ctx.lineWidth = 1.25;
    chart.data.datasets.forEach((ds, i) => {
      if (!chart.isDatasetVisible(i)) return;
      chart.getDatasetMeta(i).data.forEach((bar, j) => {
        const err = ds.errors?.[j];
        if (!err) return;
        const dx = Math.abs(x.getPixelForValue(err) - x.getPixelForValue(0));
        const cap = Math.min(5, bar.height / 4);
        ctx.beginPath();
        ctx.moveTo(bar.x - dx, bar.y);
        ctx.lineTo(bar.x + dx, bar.y);
        for (const end of [bar.x - dx, bar.x + dx]) {
          ctx.moveTo(end, bar.y - cap);
          ctx.lineTo(end, bar.y + cap);
        }
        ctx.stroke();
      });
    });
    ctx.restore();
  },
};

// (a) One horizontal bar per configuration, stacked from the 8 phases' means, whiskers at ±stderr.
export function phasesChart(canvas, groups) {
  const datasets = PHASES.map((phase) => ({
    label: phase,
    backgroundColor: PHASE_COLOURS[phase],
    data: groups.map((g) => g.phases[phase].mean),
    errors: groups.map((g) => g.phases[phase].stderr),
    counts: groups.map((g) => g.phases[phase].n),
  }));
  return make('phases', canvas, {
    type: 'bar',
    data: { labels: groups.map((g) => g.name), datasets },
    plugins: [errorBars],
    options: {
      indexAxis: 'y',
      scales: {
        x: { stacked: true, beginAtZero: true, title: { display: true, text: 'seconds (mean over done repetitions)' } },
        y: { stacked: true },
      },
      plugins: {
        legend: { position: 'bottom' },
        tooltip: {
          callbacks: {
            label: (item) => {
              const ds = item.dataset;
              const err = ds.errors[item.dataIndex];
              return `${ds.label}: ${seconds(item.raw, 2)}${err ? ` ± ${seconds(err, 2)}` : ''} (n=${ds.counts[item.dataIndex]})`;
            },
          },
        },
      },
    },
  });
}

// (b) t_learn and t_sum against the configurations' vCPU (axis 'vcpus') or GPU (axis 'gpus') count.
export function scalingChart(name, canvas, groups, offers, axis) {
  const measured = groups.filter((g) => g.tSum.n > 0)
    .map((g) => ({ g, x: resources(g.config, offers)[axis] }))
    .filter((p) => Number.isFinite(p.x))
    .sort((a, b) => a.x - b.x);
  const series = (label, colour, pick) => ({
    label,
    borderColor: colour,
    backgroundColor: colour,
    showLine: true,
    pointRadius: 5,
    data: measured.map(({ g, x }) => ({ x, y: pick(g), config: g.name })),
  });
  const unit = axis === 'vcpus' ? 'vCPUs (cores)' : 'GPUs';
  return make(name, canvas, {
    type: 'scatter',
    data: {
      datasets: [series('t_learn', PHASE_COLOURS.learn, (g) => g.tLearn.mean),
        series('t_sum', '#1f2328', (g) => g.tSum.mean)],
    },
    options: {
      scales: {
        x: { title: { display: true, text: unit }, ticks: { precision: 0 } },
        y: { beginAtZero: true, title: { display: true, text: 'seconds' } },
      },
      plugins: {
        legend: { position: 'bottom' },
        tooltip: { callbacks: { label: (item) => `${item.dataset.label} ${item.raw.config}: ${seconds(item.raw.y, 2)}` } },
      },
    },
  });
}

// ★ above each rule's cheapest bar, ⚠ above bars whose t_sum ends just under a billing step.
const costMarkers = {
  id: 'costMarkers',
  afterDatasetsDraw(chart, args, options) {
    const { ctx } = chart;
    ctx.save();
    ctx.textAlign = 'center';
    ctx.textBaseline = 'bottom';
    ctx.font = '600 13px system-ui, sans-serif';
    const mark = (ruleIndex, configIndex, text, colour) => {
      if (!chart.isDatasetVisible(ruleIndex)) return;
      const bar = chart.getDatasetMeta(ruleIndex).data[configIndex];
      if (!bar) return;
      ctx.fillStyle = colour;
      ctx.fillText(text, bar.x, bar.y - 2);
    };
    for (const [ruleIndex, configIndex] of options.nearStep || []) mark(ruleIndex, configIndex, '⚠', '#9a6700');
    for (const [ruleIndex, configIndex] of options.cheapest || []) mark(ruleIndex, configIndex, '★', '#1a7f37');
    ctx.restore();
  },
};

// Per configuration and rule: the mean cost over done runs, the cheapest per rule, the just-under-a-step cases.
export function costTable(experiment, groups) {
  const rules = experiment.rules || [];
  const cells = rules.map((rule) => groups.map((g) => (Number.isFinite(g.cost[rule.name]) ? g.cost[rule.name] : null)));
  const cheapest = rules.map((rule, ri) => [ri, experiment.summary.cheapest?.[rule.name]?.config_index])
    .filter(([, ci]) => Number.isInteger(ci));
  const nearStep = [];
  rules.forEach((rule, ri) => groups.forEach((g, ci) => {
    const near = headroomUnderStep(g.tSum.mean, rule);
    if (near) nearStep.push({ ruleIndex: ri, configIndex: ci, rule, group: g, ...near });
  }));
  return { rules, cells, cheapest, nearStep };
}

// Log-axis labels at 1, 2 and 5 times a power of ten only.
function logTick(value) {
  const mantissa = value / 10 ** Math.floor(Math.log10(value) + 1e-9);
  return [1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6) ? String(Number(value.toPrecision(1))) : '';
}

// The least of 1, 2, 5 times a power of ten at or above `v`: a log axis's top, so that a labelled tick (logTick)
// stands above the tallest bar.
export function logTop(v) {
  const decade = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * decade).find((t) => t >= v * (1 - 1e-9));
}

// (c) The cost of each configuration under each billing rule, side by side.
export function costChart(canvas, groups, table) {
  const values = table.cells.flat().filter((v) => Number.isFinite(v) && v > 0);
  const logarithmic = values.length > 1 && Math.max(...values) / Math.min(...values) > 20;
  // On a log axis a bar starts at the axis minimum: put it a decade below the smallest cost so every bar shows.
  const logMin = logarithmic ? 10 ** (Math.floor(Math.log10(Math.min(...values))) - 1) : undefined;
  const logMax = logarithmic ? logTop(Math.max(...values)) : undefined;
  const currency = groups.find((g) => g.done && g.currency)?.currency || 'USD';
  return make('cost', canvas, {
    type: 'bar',
    data: {
      labels: groups.map((g) => g.name),
      datasets: table.rules.map((rule, ri) => ({
        label: rule.name,
        backgroundColor: RULE_COLOURS[ri % RULE_COLOURS.length],
        data: table.cells[ri],
      })),
    },
    plugins: [costMarkers],
    options: {
      layout: { padding: { top: 18 } },
      scales: {
        y: {
          type: logarithmic ? 'logarithmic' : 'linear',
          beginAtZero: !logarithmic,
          min: logMin,
          max: logMax,
          ticks: logarithmic ? { callback: logTick } : {},
          title: { display: true, text: `${currency} per run${logarithmic ? ' (log scale)' : ''}` },
        },
      },
      plugins: {
        legend: { position: 'bottom' },
        costMarkers: {
          cheapest: table.cheapest,
          nearStep: table.nearStep.map((n) => [n.ruleIndex, n.configIndex]),
        },
        tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${money(item.raw, currency)}` } },
      },
    },
  });
}

// The trainer's loss and throughput per epoch, on two axes.
export function epochsChart(canvas, epochs) {
  return make('epochs', canvas, {
    type: 'line',
    data: {
      labels: epochs.map((e) => `epoch ${e.epoch}`),
      datasets: [
        { label: 'loss', data: epochs.map((e) => e.loss), borderColor: '#e15759', backgroundColor: '#e15759', yAxisID: 'y' },
        { label: 'images/s', data: epochs.map((e) => e.images_per_s), borderColor: '#4e79a7', backgroundColor: '#4e79a7', yAxisID: 'y1' },
      ],
    },
    options: {
      scales: {
        y: { position: 'left', title: { display: true, text: 'loss' } },
        y1: { position: 'right', beginAtZero: true, title: { display: true, text: 'images/s' }, grid: { drawOnChartArea: false } },
      },
      plugins: { legend: { position: 'bottom' } },
    },
  });
}

// The inference sweep (seed 001's plot): images/s and p50/p99 latency against the batch size, on two axes.
export function inferenceChart(canvas, sweep) {
  return make('inference', canvas, {
    type: 'line',
    data: {
      labels: sweep.map((b) => `${b.batch}`),
      datasets: [
        { label: 'images/s', data: sweep.map((b) => b.images_per_s), borderColor: '#4e79a7', backgroundColor: '#4e79a7', yAxisID: 'y' },
        { label: 'p50 latency (ms)', data: sweep.map((b) => b.p50_ms), borderColor: '#59a14f', backgroundColor: '#59a14f', yAxisID: 'y1' },
        { label: 'p99 latency (ms)', data: sweep.map((b) => b.p99_ms), borderColor: '#e15759', backgroundColor: '#e15759', yAxisID: 'y1' },
      ],
    },
    options: {
      scales: {
        x: { title: { display: true, text: 'batch size' } },
        y: { position: 'left', beginAtZero: true, title: { display: true, text: 'images/s' } },
        y1: { position: 'right', beginAtZero: true, title: { display: true, text: 'latency (ms)' }, grid: { drawOnChartArea: false } },
      },
      plugins: { legend: { position: 'bottom' } },
    },
  });
}

// Serving curves: p99 latency against throughput, a line per configuration (its levels in order), and the bound.
export function servingChart(canvas, choices, bound) {
  const datasets = choices.map((c, i) => ({
    label: c.config,
    data: c.curve.filter((p) => Number.isFinite(p.p99_ms)).map((p) => ({ x: p.throughput_rps, y: p.p99_ms })),
    borderColor: RULE_COLOURS[i % RULE_COLOURS.length],
    backgroundColor: RULE_COLOURS[i % RULE_COLOURS.length],
    showLine: true,
  }));
  const most = Math.max(1, ...choices.flatMap((c) => c.curve.map((p) => p.throughput_rps)));
  datasets.push({ label: `p99 bound ${bound} ms`, data: [{ x: 0, y: bound }, { x: most, y: bound }], borderColor: '#e15759',
    borderDash: [6, 4], pointRadius: 0, showLine: true });
  return make('serving', canvas, {
    type: 'scatter',
    data: { datasets },
    options: {
      scales: {
        x: { beginAtZero: true, title: { display: true, text: 'throughput (requests/s)' } },
        y: { beginAtZero: true, title: { display: true, text: 'p99 latency (ms)' } },
      },
      plugins: { legend: { position: 'bottom' } },
    },
  });
}
