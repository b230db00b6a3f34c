// The 3D view: the robot and its drum kit from the URDF (primitives only), a ghost of the
// commanded pose, views from the front, the side and the top and a free camera, faults on
// the joint that has them, and hit markers on the pads.
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import URDFLoader from 'urdf-loader';

const GHOST = new THREE.MeshBasicMaterial({
  color: 0x4fc3f7, transparent: true, opacity: 0.22, depthWrite: false,
});
const FAULT_COLOR = new THREE.Color(0xff1744);
const MARKER_COLORS = { commanded: 0xffd54f, detected: 0x69f0ae };
const MARKER_LIFE_S = 0.6;
// Camera offsets from the robot (three.js is y-up; the URDF is z-up and turned below: the
// robot faces base_link's +x, three's +x, and its right, base_link's -y, is three's +z).
const VIEWS = {
  front: new THREE.Vector3(2.6, 0.3, 0),
  side: new THREE.Vector3(0, 0.3, 2.6),
  top: new THREE.Vector3(0.01, 3.0, 0),
};
const FREE_START = new THREE.Vector3(2.1, 0.9, 1.5);

export class RobotScene {
  constructor(canvas) {
    this.canvas = canvas;
    this.renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(window.devicePixelRatio);
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(0x1b2027);
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.05, 50);
    this.controls = new OrbitControls(this.camera, canvas);
    this.target = new THREE.Vector3(0.25, 0.75, 0); // between the shoulders and the kit
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x404040, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.set(2, 4, 3);
    this.scene.add(sun);
    const grid = new THREE.GridHelper(4, 40, 0x3a4350, 0x262c34);
    this.scene.add(grid);
    this.markers = [];
    this.faulted = new Set();
    this.view('free');
  }

  load(urdfText) {
    const loader = new URDFLoader();
    this.robot = this.place(loader.parse(urdfText));
    this.robot.traverse((node) => {
      if (node.isMesh) {
        node.material = node.material.clone();
        node.userData.color = node.material.color.clone();
      }
    });
    this.ghost = this.place(loader.parse(urdfText));
    this.ghost.traverse((node) => {
      if (node.isMesh) node.material = GHOST;
    });
  }

  place(robot) {
    robot.rotation.x = -Math.PI / 2;
    this.scene.add(robot);
    return robot;
  }

  view(name) {
    const offset = VIEWS[name];
    if (offset) {
      this.camera.position.copy(this.target).add(offset);
    } else if (!this.camera.position.lengthSq()) {
      this.camera.position.copy(this.target).add(FREE_START);
    }
    this.controls.target.copy(this.target);
    this.controls.update();
  }

  showGhost(visible) {
    if (this.ghost) this.ghost.visible = visible;
  }

  setPose(names, measured, commanded) {
    if (!this.robot) return;
    names.forEach((name, i) => {
      if (Number.isFinite(measured[i])) this.robot.setJointValue(name, measured[i]);
      if (commanded && Number.isFinite(commanded[i])) this.ghost.setJointValue(name, commanded[i]);
    });
  }

  // Tint the links a faulted joint moves (up to the next joint) red; the others as loaded.
  setFaults(joints) {
    const key = [...joints].sort().join(',');
    if (!this.robot || key === this.faultKey) return;
    this.faultKey = key;
    this.robot.traverse((node) => {
      if (node.isMesh) node.material.color.copy(node.userData.color);
    });
    for (const name of joints) {
      const joint = this.robot.joints[name];
      if (!joint) continue;
      const tint = (node) => {
        if (node !== joint && node.isURDFJoint) return;
        if (node.isMesh) node.material.color.copy(FAULT_COLOR);
        node.children.forEach(tint);
      };
      tint(joint);
    }
  }

  padPosition(instrument) {
    if (!this.robot) return null;
    const key = instrument.replace(/ /g, '_');
    const link = this.robot.links[`kit_${key}`] || this.robot.links[`kit_${key.split('_').pop()}`];
    if (!link) return null;
    return link.getWorldPosition(new THREE.Vector3());
  }

  mark(instrument, source) {
    const at = this.padPosition(instrument);
    if (!at) return;
    const marker = new THREE.Mesh(
      new THREE.SphereGeometry(source === 'detected' ? 0.035 : 0.05, 16, 12),
      new THREE.MeshBasicMaterial({
        color: MARKER_COLORS[source] || 0xffffff, transparent: true, opacity: 0.9,
        wireframe: source !== 'detected',
      }),
    );
    marker.position.copy(at);
    marker.userData.born = performance.now() / 1000;
    this.scene.add(marker);
    this.markers.push(marker);
  }

  render() {
    const { clientWidth: width, clientHeight: height } = this.canvas;
    if (this.canvas.width !== width || this.canvas.height !== height) {
      this.renderer.setSize(width, height, false);
      this.camera.aspect = width / Math.max(height, 1);
      this.camera.updateProjectionMatrix();
    }
    const now = performance.now() / 1000;
    this.markers = this.markers.filter((marker) => {
      const age = now - marker.userData.born;
      if (age < MARKER_LIFE_S) {
        marker.material.opacity = 0.9 * (1 - age / MARKER_LIFE_S);
        marker.scale.setScalar(1 + age);
        return true;
      }
      this.scene.remove(marker);
      marker.geometry.dispose();
      marker.material.dispose();
      return false;
    });
    this.controls.update();
    this.renderer.render(this.scene, this.camera);
  }
}
