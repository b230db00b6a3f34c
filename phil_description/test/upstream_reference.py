"""The upstream robot's joint table (the numbers this description must carry) and the path of
upstream data files, which tests read when the shared reference folder is present."""

from pathlib import Path

UPSTREAM = Path(__file__).resolve().parents[2].parent / 'shared' / 'reference' / 'upstream'
UPSTREAM_CONFIG = UPSTREAM / 'Phil-drum-robot@176f39a' / 'drumrobot_server' / 'config'

# id order, name, family, model, gear, CAN node / DXL id, direction, initial, min, max (deg),
# current limit (A), gains (control_gain or (kp, kd)).
JOINT_TABLE = [
    (0, 'waist', 'tmotor', 'AK10-9', 9, 0x00, 1, 10, -90, 90, 29.8, 1000),
    (1, 'right_shoulder_1', 'tmotor', 'AK70-10', 10, 0x01, -1, 90, 0, 150, 23.2, 1000),
    (2, 'left_shoulder_1', 'tmotor', 'AK70-10', 10, 0x02, -1, 90, 30, 180, 23.2, 1000),
    (3, 'right_shoulder_2', 'tmotor', 'AK70-10', 10, 0x03, 1, 0, -60, 90, 23.2, 4000),
    (4, 'right_elbow', 'tmotor', 'AK70-10', 10, 0x04, -1, 90, 0, 140.1, 23.2, 4000),
    (5, 'left_shoulder_2', 'tmotor', 'AK70-10', 10, 0x05, -1, 0, -60, 90, 23.2, 1000),
    (6, 'left_elbow', 'tmotor', 'AK70-10', 10, 0x06, 1, 90, 0, 140.1, 23.2, 4000),
    (7, 'right_wrist', 'epos4', 'DCX22L', 35, 0x07, -1, 90, -90, 100, None, (60.0, 1.0)),
    (8, 'left_wrist', 'epos4', 'DCX22L', 35, 0x08, -1, 90, -90, 100, None, (60.0, 1.0)),
    (9, 'right_pedal', 'epos4', 'DCX32L', 35, 0x0A, 1, 0, -90, 200, None, (50.0, 1.0)),
    (10, 'left_pedal', 'epos4', 'DCX32L', 35, 0x0B, -1, 0, -90, 200, None, (50.0, 1.0)),
    (11, 'head_yaw', 'dynamixel', 'XM430-W210-T', None, 1, -1, 0, -90, 90, None, None),
    (12, 'head_pitch', 'dynamixel', 'XM430-W210-T', None, 2, 1, -90, -100, 90, None, None),
]

# The IK / planning limits upstream keeps separately (kinematics.json), deg.
IK_LIMITS = {
    'waist': (-90, 90),
    'right_shoulder_1': (0, 150),
    'left_shoulder_1': (30, 180),
    'right_shoulder_2': (-60, 90),
    'right_elbow': (0, 140),
    'left_shoulder_2': (-60, 90),
    'left_elbow': (0, 140),
    'right_wrist': (-90, 90),
    'left_wrist': (-90, 90),
    'right_pedal': (-90, 200),
    'left_pedal': (-90, 200),
    'head_yaw': (-90, 90),
    'head_pitch': (-90, 90),
}
