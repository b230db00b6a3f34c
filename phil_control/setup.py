"""Install the phil_control package."""

from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = 'phil_control'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE}']),
        (f'share/{PACKAGE}', ['package.xml']),
        (f'share/{PACKAGE}/config', glob('config/*.yaml')),
        (f'share/{PACKAGE}/launch', glob('launch/*.py')),
        # The project's scores (kept at the repository root) and their play list.
        (f'share/{PACKAGE}/scores', glob('../scores/*.yaml')),
        *[
            (f'share/{PACKAGE}/scores/{Path(folder).name}', glob(f'{folder}/*.txt'))
            for folder in sorted(glob('../scores/*/'))
        ],
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='Phil maintainers',
    maintainer_email='phil-maintainers@kist.re.kr',
    description='See package.xml.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'behavior_planner = phil_control.behavior_planner.node:main',
            'tcp_bridge = phil_control.tcp_bridge.node:main',
            'gen1_bridge = phil_control.gen1_bridge.node:main',
            'trajectory_generator = phil_control.trajectory_generator.node:main',
            'score_player = phil_control.score_player.node:main',
        ],
    },
)
