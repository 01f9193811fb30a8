# run1.sh again with new = 97107be (proposing ahead and measuring in the order builds end)
# against old = 9cb4357, the trees made as run1.sh says (`git archive 97107be` into ab/new)
TGZ=run2_ab.tgz bash "$(dirname "$0")/run1.sh"
