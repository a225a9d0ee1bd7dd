"""Course tooling for instructors: release student copies, grade submissions safely.

* :mod:`~perfmodel.course.workbooks`: masters to student copies and Gradescope zips
  (otter assign, cached);
* :mod:`~perfmodel.course.grading`: grade a folder of submissions into a CSV and
  per-student feedback;
* :mod:`~perfmodel.course.sandbox`, :mod:`~perfmodel.course.sandbox_worker` and
  :mod:`~perfmodel.course.isolation`: run each submission in its own bubblewrap sandbox
  with limits;
* :mod:`~perfmodel.course.gradescope`: the entry point Gradescope's autograder runs;
* :mod:`~perfmodel.course.cli`: the ``perfmodel`` command.

What a learner's notebook imports stays at the top level: :mod:`perfmodel.exercises`
(answer keys and checks) and :mod:`perfmodel.checker` (the student copies' ``Notebook``).
"""
