"""Install the Phil description: URDF/xacro, kit and pose config, rviz layout, robot model API."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'phil_description'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', [f'resource/{PACKAGE}']),
        (f'share/{PACKAGE}', ['package.xml']),
        (f'share/{PACKAGE}/urdf', glob('urdf/*.xacro')),
        (f'share/{PACKAGE}/config', glob('config/*.yaml')),
        (f'share/{PACKAGE}/rviz', glob('rviz/*.rviz')),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='Phil maintainers',
    maintainer_email='phil-maintainers@kist.re.kr',
    description='Phil URDF, drum kit, named poses and a ROS-free robot model API.',
    license='Apache-2.0',
)
