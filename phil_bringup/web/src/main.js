// The control tower page: live state over a WebSocket (/ws), commands as protocol lines that
// the graph checks exactly as the TCP port's (the buttons only mirror the state machine).
import { RobotScene } from './scene.js';
import { Timeline } from './timeline.js';

const $ = (selector) => document.querySelector(selector);
const DEG = 180 / Math.PI;
const fmt = (value, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : '-');

const scene = new RobotScene($('#scene'));
const timeline = new Timeline($('#timeline'));
let socket = null;
let state = 'STANDBY';
let config = null;
let serverClockOffsetS = 0; // server time - page time, for the timeline

function send(line) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ line }));
}

function enableForState() {
  for (const button of document.querySelectorAll('[data-states]')) {
    button.disabled = !button.dataset.states.split(',').includes(state);
  }
  for (const slider of document.querySelectorAll('input.joint')) slider.disabled = state !== 'IDLE';
}

function setup(hello) {
  config = hello;
  const select = $('#play-id');
  select.replaceChildren(...hello.play_ids.map((id) => new Option(id, id)));
  $('#pads').replaceChildren(...hello.instruments.map((name) => {
    const button = document.createElement('button');
    button.textContent = name;
    button.dataset.line = `HIT|${name}`;
    button.dataset.states = 'IDLE';
    return button;
  }));
  const rows = hello.joints.map((joint) => {
    const row = document.createElement('tr');
    row.id = `joint-${joint.name}`;
    const lower = joint.lower_rad * DEG;
    const upper = joint.upper_rad * DEG;
    row.innerHTML = `<td>${joint.name}</td><td class="measured">-</td><td class="target">0</td>` +
      `<td><input type="range" class="joint" min="${lower}" max="${upper}" step="0.5" value="0"></td>` +
      `<td>${fmt(lower, 0)} .. ${fmt(upper, 0)}</td>`;
    const slider = row.querySelector('input');
    // The slider follows the measured angle until it is taken; released, it sends the MOVE.
    slider.addEventListener('pointerdown', () => { slider.dataset.held = '1'; });
    slider.addEventListener('input', () => { row.querySelector('.target').textContent = fmt(+slider.value); });
    slider.addEventListener('change', () => {
      delete slider.dataset.held;
      send(`MOVE|${joint.name}|${(+slider.value).toFixed(2)}|2.0`);
    });
    return row;
  });
  $('#joints tbody').replaceChildren(...rows);
  $('#plots').href = hello.plots_url;
  scene.load(hello.urdf);
  enableForState();
}

function showStatus(status, names, measured) {
  state = status.state;
  const badge = $('#state');
  badge.textContent = state;
  badge.className = `pill state ${state}`;
  $('#song').textContent = status.play_id ? `${status.play_id} bar ${status.bar}/${status.total_bars}` : '';
  const facts = {
    speed: fmt(status.speed, 2),
    'resume point': status.resume_valid ? `${status.resume_play_id} bar ${status.resume_bar}` : 'none',
    'real-time': status.realtime ? 'SCHED_FIFO' : 'no',
    faults: status.faults.map((f) => `${f.joint || 'robot'}: ${f.reason}`).join('; ') || 'none',
    'last refusal': status.last_rejection || '-',
    'nodes down': status.unresponsive.join(', ') || 'none',
  };
  $('#facts').replaceChildren(...Object.entries(facts).flatMap(([key, value]) => {
    const dt = document.createElement('dt');
    dt.textContent = key;
    const dd = document.createElement('dd');
    dd.textContent = value;
    return [dt, dd];
  }));
  const faulted = new Set(status.faults.map((f) => f.joint).filter(Boolean));
  scene.setFaults(faulted);
  names.forEach((name, i) => {
    const row = document.getElementById(`joint-${name}`);
    if (!row) return;
    row.querySelector('.measured').textContent = fmt(measured[i] * DEG);
    const slider = row.querySelector('input');
    if (!slider.dataset.held && Number.isFinite(measured[i])) {
      slider.value = measured[i] * DEG;
      row.querySelector('.target').textContent = fmt(measured[i] * DEG);
    }
    row.classList.toggle('fault', faulted.has(name));
    const joint = config.joints[i];
    const margin = 5 / DEG;
    row.classList.toggle('near-limit',
      measured[i] < joint.lower_rad + margin || measured[i] > joint.upper_rad - margin);
  });
  enableForState();
}

function showMotors(motors) {
  $('#motors tbody').replaceChildren(...motors.map((m) => {
    const row = document.createElement('tr');
    row.className = m.connected ? '' : 'fault';
    const effort = m.family === 'epos4' ? fmt(m.torque_nm, 2) : fmt(m.current_a, 2);
    const cells = [m.joint, `${m.bus}:${m.device_id}`, fmt(m.position_rad * DEG), fmt(m.velocity_rad_s, 2),
      effort, m.family === 'tmotor' ? fmt(m.temperature_c, 0) : '-',
      m.error_code ? `${m.status} (${m.error_code})` : m.status, fmt(m.age_ms, 0)];
    for (const text of cells) {
      const cell = document.createElement('td');
      cell.textContent = text;
      row.append(cell);
    }
    return row;
  }));
}

function onFrame(frame) {
  serverClockOffsetS = frame.time_s - performance.now() / 1000;
  const { names, measured_rad: measured, commanded_rad: commanded } = frame.joints;
  scene.setPose(names, measured, commanded);
  showStatus(frame.status, names, measured);
  showMotors(frame.motors);
  for (const hit of frame.hits) scene.mark(hit.instrument, hit.source);
  timeline.add(frame.errors);
  $('#timeline').dataset.strokes = (+($('#timeline').dataset.strokes || 0) + frame.errors.length).toString();
}

function connect() {
  socket = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`);
  socket.onopen = () => { $('#connection').textContent = 'live'; $('#connection').classList.add('ok'); };
  socket.onclose = () => {
    $('#connection').textContent = 'disconnected';
    $('#connection').classList.remove('ok');
    setTimeout(connect, 1000);
  };
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.type === 'hello') setup(message);
    else if (message.type === 'state') onFrame(message);
    else if (message.type === 'reply') {
      const reply = $('#reply');
      reply.textContent = `${message.line} -> ${message.reply}`;
      reply.classList.toggle('err', message.reply.startsWith('ERR'));
    }
  };
}

document.addEventListener('click', (event) => {
  const button = event.target.closest('button');
  if (!button) return;
  if (button.dataset.line) send(button.dataset.line);
  if (button.dataset.view) {
    scene.view(button.dataset.view);
    for (const other of document.querySelectorAll('[data-view]')) other.classList.toggle('active', other === button);
  }
});
$('#play').addEventListener('click', () => send(`PLAY|${$('#play-id').value}`));
$('#speed').addEventListener('input', () => { $('#speed-value').textContent = (+$('#speed').value).toFixed(2); });
$('#set-speed').addEventListener('click', () => send(`PLAY_CTRL|speed|${(+$('#speed').value).toFixed(2)}`));
$('#look').addEventListener('click', () => send(`LOOK|${$('#pan').value}|${$('#tilt').value}`));
$('#ghost').addEventListener('change', () => scene.showGhost($('#ghost').checked));

function animate() {
  scene.render();
  timeline.draw(performance.now() / 1000 + serverClockOffsetS);
  requestAnimationFrame(animate);
}
connect();
animate();
