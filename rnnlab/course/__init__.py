"""The course kit's generated parts: the term plans (:mod:`rnnlab.course.plan`)."""
